package analysis

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
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
	// Legend, when not nil, is drawn outside the panels so that it never hides data: on the
	// right, or below the panels in columns when it would take more than 30% of the width.
	Legend *Legend
	// Width and Height are the canvas size.
	Width, Height vg.Length

	// cbar, when not nil, is a colour bar drawn between the panels and the legend, level
	// with the data area of the first panel.
	cbar *colorBar
	// heat is the cells of a heat map figure (for tests).
	heat *heatCells
	// cats, when not nil, fits the category labels of a bar chart to the panel width when
	// the figure is drawn.
	cats *categoryFit
	// fontBase is the tick-label font size the figure was built with (SetFontSize scales
	// every font by size / fontBase); 0 means baseFontSize.
	fontBase vg.Length
	// alignRow lays a single row of panels out with data areas of equal width however
	// different their margins (alignRow), where plot.Align gives a panel with wide tick
	// labels most of the width.
	alignRow bool
}

// alignRow returns canvases for one row of plots, side by side in area with gap between
// them, whose data areas have equal widths and the same top and bottom.
func alignRow(plots []*plot.Plot, area draw.Canvas, gap vg.Length) []draw.Canvas {
	n := len(plots)
	left, right := make([]vg.Length, n), make([]vg.Length, n)
	var margins, top, bottom vg.Length
	for i, p := range plots {
		d := p.DataCanvas(area)
		left[i], right[i] = d.Min.X-area.Min.X, area.Max.X-d.Max.X
		margins += left[i] + right[i]
		top, bottom = max(top, area.Max.Y-d.Max.Y), max(bottom, d.Min.Y-area.Min.Y)
	}
	w := (area.Max.X - area.Min.X - margins - gap*vg.Length(n-1)) / vg.Length(n)
	out := make([]draw.Canvas, n)
	x := area.Min.X
	for i, p := range plots {
		c := area
		c.Min.X, c.Max.X = x, x+left[i]+w+right[i]
		d := p.DataCanvas(c)
		// Crop so that every data area spans the same heights.
		c.Max.Y -= top - (c.Max.Y - d.Max.Y)
		c.Min.Y += bottom - (d.Min.Y - c.Min.Y)
		out[i] = c
		x = c.Max.X + gap
	}
	return out
}

// baseFontSize is the default size of tick labels and legend text; titles and axis labels
// are larger in proportion.
const baseFontSize = 8.5

// SetFontSize scales every font of the figure (titles, axis labels, tick labels, legend,
// colour bar, cell labels) so that tick labels and legend text are size points and the other
// text keeps its proportion to them.
func (f *Figure) SetFontSize(size vg.Length) {
	if size <= 0 {
		return
	}
	base := f.fontBase
	if base == 0 {
		base = baseFontSize
	}
	k := size / base
	for _, row := range f.Plots {
		for _, p := range row {
			if p == nil {
				continue
			}
			p.Title.TextStyle.Font.Size *= k
			p.Title.Padding *= k
			for _, a := range []*plot.Axis{&p.X, &p.Y} {
				a.Label.TextStyle.Font.Size *= k
				a.Tick.Label.Font.Size *= k
			}
		}
	}
	if f.Legend != nil {
		f.Legend.style.TextStyle.Font.Size *= k
		f.Legend.style.ThumbnailWidth *= k
	}
	if f.cbar != nil {
		f.cbar.text.Font.Size *= k
	}
	if f.cats != nil && f.cats.saved {
		f.cats.orig.Font.Size *= k
	}
	f.fontBase = size
}

// single wraps one plot as a figure.
func single(p *plot.Plot, l *Legend, w, h vg.Length) *Figure {
	return &Figure{Plots: [][]*plot.Plot{{p}}, Legend: l, Width: w, Height: h}
}

// Legend is the key of a figure's series: entries of a name and its thumbnails (line, marker,
// fill), in the order added.
type Legend struct {
	style   plot.Legend // the text style, padding and thumbnail width of every column
	entries []legendEntry
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// newLegend returns an empty legend in the common style.
func newLegend() *Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(baseFontSize)
	l.ThumbnailWidth = vg.Points(22)
	l.Padding = vg.Points(3)
	l.Top, l.Left = true, true
	return &Legend{style: l}
}

// Add appends an entry.
func (l *Legend) Add(name string, thumbs ...plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{name, thumbs})
}

// column returns a gonum legend of entries.
func (l *Legend) column(entries []legendEntry) *plot.Legend {
	c := l.style
	for _, e := range entries {
		c.Add(e.name, e.thumbs...)
	}
	return &c
}

// entryWidth returns the width of the widest entry, thumbnail included.
func (l *Legend) entryWidth() vg.Length {
	var w vg.Length
	for _, e := range l.entries {
		w = max(w, l.style.TextStyle.Width(e.name))
	}
	return w + l.style.ThumbnailWidth + l.style.Padding
}

// width returns the width the legend takes to the right of the panels.
func (l *Legend) width() vg.Length { return l.entryWidth() + vg.Points(10) }

// rowHeight returns the height of one entry.
func (l *Legend) rowHeight() vg.Length {
	return l.style.TextStyle.Height("Ag") + l.style.Padding
}

// draw draws the figure on c.
func (f *Figure) draw(c vg.CanvasSizer) {
	dc := draw.New(c)
	w, h := c.Size()
	dc.FillPolygon(color.White, []vg.Point{{}, {X: w}, {X: w, Y: h}, {Y: h}})
	area := dc
	if l := f.Legend; l != nil && len(l.entries) > 0 {
		if lw := l.width(); lw <= 0.3*w {
			lc := dc
			lc.Min.X = dc.Max.X - lw
			lc.Max.Y = dc.Max.Y - vg.Points(28) // below the title
			area.Max.X = lc.Min.X
			l.column(l.entries).Draw(lc)
		} else {
			// Below the panels, in as many columns as fit, filled column by column.
			colW := l.entryWidth() + vg.Points(12)
			cols := max(1, min(len(l.entries), int((w-vg.Points(20))/colW)))
			rows := (len(l.entries) + cols - 1) / cols
			lh := vg.Length(rows)*l.rowHeight() + vg.Points(8)
			x0 := dc.Min.X + (w-vg.Length(cols)*colW)/2
			for c := range cols {
				part := l.entries[c*rows : min(len(l.entries), (c+1)*rows)]
				lc := dc
				lc.Min.X, lc.Max.X = x0+vg.Length(c)*colW, x0+vg.Length(c+1)*colW
				lc.Max.Y = dc.Min.Y + lh - vg.Points(4)
				l.column(part).Draw(lc)
			}
			area.Min.Y += lh
		}
	}
	var cb draw.Canvas
	if f.cbar != nil {
		cb = area
		cb.Min.X = area.Max.X - f.cbar.width()
		area.Max.X = cb.Min.X
	}
	for _, row := range f.Plots {
		for _, p := range row {
			if p != nil {
				wrapTitle(p, (area.Max.X-area.Min.X)/vg.Length(len(row)))
			}
		}
	}
	if f.cats != nil {
		f.cats.fit(area.Max.X - area.Min.X)
	}
	rows := len(f.Plots)
	if rows == 1 && len(f.Plots[0]) == 1 {
		f.Plots[0][0].Draw(area)
		if f.cbar != nil {
			d := f.Plots[0][0].DataCanvas(area)
			f.cbar.draw(cb, d.Min.Y, d.Max.Y)
		}
		return
	}
	if rows == 1 && f.alignRow {
		inner := area
		inner.Min.X += vg.Millimeter * 2 // tick labels measured a little narrow in PNG stay whole
		canvases := alignRow(f.Plots[0], inner, vg.Millimeter*4)
		for j, p := range f.Plots[0] {
			p.Draw(canvases[j])
		}
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

// colorBar is the key of a heat map: the colour map from lo to hi as a vertical bar with
// labelled ticks on its right and the quantity's name above it.
type colorBar struct {
	lo, hi float64
	cmap   func(t float64) color.NRGBA // t in [0, 1]
	label  string
	text   text.Style
}

// barWidth is the width of the coloured bar itself.
const barWidth = 0.45 * vg.Centimeter

// width returns the horizontal space the colour bar takes, tick labels included.
func (b *colorBar) width() vg.Length {
	var w vg.Length
	for _, t := range b.ticks() {
		w = max(w, b.text.Width(t.Label))
	}
	return vg.Points(10) + barWidth + vg.Points(4) + w + vg.Points(4) + b.text.Height(b.label) + vg.Points(6)
}

// ticks returns the labelled ticks of the colour bar.
func (b *colorBar) ticks() []plot.Tick {
	var out []plot.Tick
	for _, t := range (niceTicks{}).Ticks(b.lo, b.hi) {
		if t.Label != "" && t.Value >= b.lo-1e-9 && t.Value <= b.hi+1e-9 {
			out = append(out, t)
		}
	}
	return out
}

// draw draws the bar in the canvas c between heights y0 and y1.
func (b *colorBar) draw(c draw.Canvas, y0, y1 vg.Length) {
	x0 := c.Min.X + vg.Points(10)
	x1 := x0 + barWidth
	const steps = 128
	h := (y1 - y0) / steps
	for i := range steps {
		ya, yb := y0+vg.Length(i)*h, y0+vg.Length(i+1)*h+vg.Points(0.3) // overlap: no seams
		c.FillPolygon(b.cmap((float64(i)+0.5)/steps), []vg.Point{{X: x0, Y: ya}, {X: x1, Y: ya}, {X: x1, Y: min(yb, y1)}, {X: x0, Y: min(yb, y1)}})
	}
	frame := draw.LineStyle{Color: color.Gray{Y: 0x40}, Width: vg.Points(0.5)}
	c.StrokeLines(frame, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}})
	sty := b.text
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	var w vg.Length
	for _, t := range b.ticks() {
		y := y0
		if b.hi > b.lo {
			y = y0 + vg.Length((t.Value-b.lo)/(b.hi-b.lo))*(y1-y0)
		}
		c.StrokeLine2(frame, x1, y, x1+vg.Points(3), y)
		c.FillText(sty, vg.Point{X: x1 + vg.Points(4), Y: y}, t.Label)
		w = max(w, sty.Width(t.Label))
	}
	// The quantity's name, turned by 90°, right of the tick labels.
	sty.Rotation = math.Pi / 2
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	c.FillText(sty, vg.Point{X: x1 + vg.Points(8) + w, Y: (y0 + y1) / 2}, b.label)
}

// wrapTitle breaks a plot title that is wider than avail at its " — " into two lines.
func wrapTitle(p *plot.Plot, avail vg.Length) {
	t := p.Title.Text
	if strings.Contains(t, "\n") || p.Title.TextStyle.Width(t) <= avail {
		return
	}
	if head, tail, ok := strings.Cut(t, " — "); ok {
		p.Title.Text = head + "\n" + tail
	}
}
