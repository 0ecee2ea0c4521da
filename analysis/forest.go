package analysis

import (
	"errors"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ForestPlot draws every row of a claims check at a glance: one panel per claim and
// comparison, one line per experiment × trace × setting (top to bottom in table order), Δ
// average JCT with its 95% CI as a marker and a whisker, and the paper's claimed range shaded.
// Evidence rows that count in the tally are filled circles, sensitivity rows hollow circles,
// rows whose runs another row already counts hollow squares; a dashed line marks Δ = 0.
// Reading across a line compares the three comparisons of one cell.
func ForestPlot(s *ClaimSet) (*Figure, error) {
	if len(s.Rows) == 0 {
		return nil, errors.New("analysis: forest plot: no claims rows")
	}
	// The cells, in table order, and the comparisons, in claim order.
	var cells []*Group
	cellIndex := map[*Group]int{}
	type comp struct{ id, baseline string }
	var comps []comp
	for _, r := range s.Rows {
		if _, ok := cellIndex[r.Group]; !ok {
			cellIndex[r.Group] = len(cells)
			cells = append(cells, r.Group)
		}
		c := comp{r.Claim.ID, r.Claim.Baseline}
		found := false
		for _, x := range comps {
			found = found || x == c
		}
		if !found {
			comps = append(comps, c)
		}
	}
	n := len(cells)
	// Line i is drawn at y = n − 1 − i, so that the table's first row is on top.
	names := make([]string, n)
	for i, g := range cells {
		names[i] = s.l.where(g)
	}
	lo, hi := 0.0, 0.0
	for _, r := range s.Rows {
		lo, hi = min(lo, r.Delta.Lo(), -r.Claim.Hi), max(hi, r.Delta.Hi())
	}
	span := hi - lo
	lo, hi = lo-0.04*span, hi+0.04*span
	var row []*plot.Plot
	for k, c := range comps {
		var claim Claim
		for _, r := range s.Rows {
			if r.Claim.ID == c.id && r.Claim.Baseline == c.baseline {
				claim = r.Claim
				break
			}
		}
		p := newPlot(claim.ID+": "+claim.Comparison(), "Δ avg JCT (%), 95% CI", "")
		p.Title.TextStyle.Font.Size = vg.Points(9.5)
		p.X.Min, p.X.Max = lo, hi
		p.Y.Min, p.Y.Max = -0.7, float64(n)-0.3
		band := &xBand{lo: -claim.Hi, hi: -claim.Lo, color: claimBand}
		if claim.UpTo {
			band.hi = 0
		}
		p.Add(band)
		p.Add(&zeroLine{})
		var ticks plot.ConstantTicks
		for i := range n {
			label := ""
			if k == 0 {
				label = names[i]
			}
			ticks = append(ticks, plot.Tick{Value: float64(n - 1 - i), Label: label})
		}
		p.Y.Tick.Marker = ticks
		p.Y.Tick.Label.Font.Size = vg.Points(7)
		for _, r := range s.Rows {
			if r.Claim != claim {
				continue
			}
			y := float64(n - 1 - cellIndex[r.Group])
			st := forestStyle(&r)
			d := r.Delta
			if d.HasCI() {
				p.Add(&whisker{y: y, lo: d.Lo(), hi: d.Hi(), color: st.Color})
			}
			sc, err := plotter.NewScatter(plotter.XYs{{X: d.Mean, Y: y}})
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = st
			p.Add(sc)
		}
		row = append(row, p)
	}
	leg := newLegend()
	for _, e := range []struct {
		name string
		r    ClaimRow
	}{
		{"evidence (counted)", ClaimRow{SameAs: -1}},
		{"sensitivity (ξ scaled or symmetric)", ClaimRow{SameAs: -1, Sensitivity: "x"}},
		{"runs another row counts", ClaimRow{SameAs: 0}},
	} {
		sc, err := plotter.NewScatter(plotter.XYs{{}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = forestStyle(&e.r)
		leg.Add(e.name, sc)
	}
	leg.Add("paper's claimed range", &xBand{color: claimBand})
	f := &Figure{Plots: [][]*plot.Plot{row}, Legend: leg, alignRow: true, Width: 26 * vg.Centimeter,
		Height: vg.Length(math.Max(9, 2.5+0.48*float64(n))) * vg.Centimeter}
	return f, nil
}

// forestStyle is the marker of a forest plot row.
func forestStyle(r *ClaimRow) draw.GlyphStyle {
	st := draw.GlyphStyle{Color: oiBlue, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	switch {
	case r.Sensitivity != "":
		st.Color, st.Shape = oiVermilion, draw.RingGlyph{}
	case r.SameAs >= 0:
		st.Color, st.Shape = oiGrey, draw.SquareGlyph{}
	}
	return st
}

// xBand shades the x interval [lo, hi] over the whole height of a panel.
type xBand struct {
	lo, hi float64
	color  color.NRGBA
}

// Plot implements plot.Plotter.
func (b *xBand) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0, x1 := trX(b.lo), trX(b.hi)
	c.FillPolygon(premultiplied(b.color), c.ClipPolygonX([]vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}))
}

// Thumbnail implements plot.Thumbnailer.
func (b *xBand) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(premultiplied(b.color), []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// zeroLine draws a dashed vertical line at x = 0.
type zeroLine struct{}

// Plot implements plot.Plotter.
func (zeroLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(0)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 0x50}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, x, c.Min.Y, x, c.Max.Y)
}

// whisker draws a horizontal 95% CI from lo to hi at height y, clipped to the panel.
type whisker struct {
	y, lo, hi float64
	color     color.Color
}

// Plot implements plot.Plotter.
func (w *whisker) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	y, x0, x1 := trY(w.y), trX(w.lo), trX(w.hi)
	ls := draw.LineStyle{Color: w.color, Width: vg.Points(1)}
	capH := vg.Points(2.5)
	c.StrokeLines(ls, c.ClipLinesXY([]vg.Point{{X: x0, Y: y}, {X: x1, Y: y}}, []vg.Point{{X: x0, Y: y - capH}, {X: x0, Y: y + capH}},
		[]vg.Point{{X: x1, Y: y - capH}, {X: x1, Y: y + capH}})...)
}

// claimBand is the shade of a paper's claimed range.
var claimBand = color.NRGBA{0xf0, 0xe4, 0x42, 0x70}

// yBand shades the y interval [lo, hi] (drawn coordinates) over the whole width of a panel.
type yBand struct {
	lo, hi float64
	color  color.NRGBA
}

// Plot implements plot.Plotter.
func (b *yBand) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y0, y1 := trY(b.lo), trY(b.hi)
	c.FillPolygon(premultiplied(b.color), c.ClipPolygonY([]vg.Point{{X: c.Min.X, Y: y0}, {X: c.Max.X, Y: y0}, {X: c.Max.X, Y: y1}, {X: c.Min.X, Y: y1}}))
}

// Thumbnail implements plot.Thumbnailer.
func (b *yBand) Thumbnail(c *draw.Canvas) { (&xBand{color: b.color}).Thumbnail(c) }

// hLine draws a thin grey horizontal reference line at y (drawn coordinates).
type hLine struct{ y float64 }

// Plot implements plot.Plotter.
func (h *hLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	if y < c.Min.Y || y > c.Max.Y {
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 0x30}, Width: vg.Points(0.8)}, c.Min.X, y, c.Max.X, y)
}

// vMark draws a dotted vertical line at x (data coordinates; log10 of it on a log axis) with
// a label at its top.
type vMark struct {
	x     float64
	label string
	log   bool
}

// Plot implements plot.Plotter.
func (v *vMark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	xv := v.x
	if v.log {
		xv = math.Log10(xv)
	}
	x := trX(xv)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: color.Gray{Y: 0x30}, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}, x, c.Min.Y, x, c.Max.Y)
	if v.label != "" {
		sty := p.X.Tick.Label
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
		c.FillText(sty, vg.Point{X: x + vg.Points(2), Y: c.Max.Y - vg.Points(2)}, v.label)
	}
}
