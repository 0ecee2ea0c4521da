package analysis

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// PNGDPI is the resolution of PNG figures.
const PNGDPI = 150

// pdfEpoch replaces the creation and modification dates that the PDF backend takes from
// the clock, so that PDF output is byte-stable: D:YYYYMMDDhhmmss, the same length as the
// original so that the cross-reference offsets stay valid.
const pdfEpoch = "D:20000101000000"

// Figure is a rendered-ready figure: one plot or a grid of plots on a canvas of fixed size,
// with an optional legend to the right of the panels.
type Figure struct {
	// Plots holds the panels row by row; every row has the same length.
	Plots [][]*plot.Plot
	// Legend, when not nil, is drawn outside the panels, on the right, so that it never
	// hides data.
	Legend *plot.Legend
	// Width and Height are the canvas size.
	Width, Height vg.Length
}

// single wraps one plot as a figure.
func single(p *plot.Plot, l *plot.Legend, w, h vg.Length) *Figure {
	return &Figure{Plots: [][]*plot.Plot{{p}}, Legend: l, Width: w, Height: h}
}

// newLegend returns an empty legend in the common style.
func newLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(8.5)
	l.ThumbnailWidth = vg.Points(22)
	l.Padding = vg.Points(3)
	l.Top, l.Left = true, true
	return &l
}

// draw draws the figure on c.
func (f *Figure) draw(c vg.CanvasSizer) {
	dc := draw.New(c)
	w, h := c.Size()
	dc.FillPolygon(color.White, []vg.Point{{}, {X: w}, {X: w, Y: h}, {Y: h}})
	area := dc
	if f.Legend != nil {
		r := f.Legend.Rectangle(dc)
		lw := r.Max.X - r.Min.X + vg.Points(10)
		lc := dc
		lc.Min.X = dc.Max.X - lw
		lc.Max.Y = dc.Max.Y - vg.Points(28) // below the title
		area.Max.X = lc.Min.X
		f.Legend.Draw(lc)
	}
	rows := len(f.Plots)
	if rows == 1 && len(f.Plots[0]) == 1 {
		f.Plots[0][0].Draw(area)
		return
	}
	tiles := draw.Tiles{Rows: rows, Cols: len(f.Plots[0]), PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 1, PadBottom: vg.Millimeter * 1, PadLeft: vg.Millimeter * 1, PadRight: vg.Millimeter * 1}
	canvases := plot.Align(f.Plots, tiles, area)
	for i := range f.Plots {
		for j, p := range f.Plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
}

// Encode writes the figure in format "png", "svg" or "pdf". SVG and PNG output is a pure
// function of the figure. The PDF backend stamps the current time as creation and
// modification date; Encode replaces both with a fixed date, so PDF output is byte-stable
// too.
func (f *Figure) Encode(w io.Writer, format string) error {
	var wt io.WriterTo
	switch strings.ToLower(format) {
	case "svg":
		c := vgsvg.New(f.Width, f.Height)
		f.draw(c)
		wt = c
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(PNGDPI))
		f.draw(c)
		wt = vgimg.PngCanvas{Canvas: c}
	case "pdf":
		c := vgpdf.New(f.Width, f.Height)
		f.draw(c)
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return fmt.Errorf("analysis: pdf: %w", err)
		}
		_, err := w.Write(fixPDFDates(buf.Bytes()))
		return err
	default:
		return fmt.Errorf("analysis: unknown figure format %q (known: png, svg, pdf)", format)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("analysis: %s: %w", format, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// fixPDFDates replaces the /CreationDate and /ModDate values with pdfEpoch.
func fixPDFDates(b []byte) []byte {
	re := regexp.MustCompile(`/(CreationDate|ModDate) \(D:[0-9]{14}\)`)
	return re.ReplaceAllFunc(b, func(m []byte) []byte {
		key := m[:bytes.IndexByte(m, ' ')]
		return append(append(bytes.Clone(key), " ("...), pdfEpoch+")"...)
	})
}

// Save writes the figure to path in the format named by its extension (.png, .svg, .pdf),
// atomically: a temporary file in the same directory, renamed into place.
func (f *Figure) Save(path string) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	var buf bytes.Buffer
	if err := f.Encode(&buf, format); err != nil {
		return fmt.Errorf("%w (file %s)", err, path)
	}
	return WriteFileAtomic(path, buf.Bytes())
}

// WriteFileAtomic writes data to path through a temporary file in the same directory and a
// rename, so that readers never see a partial file.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("analysis: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("analysis: write %s: %w", path, err)
	}
	return nil
}
