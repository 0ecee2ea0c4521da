package analysis

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sharebench/sharebench/profile"
)

// viridis maps t in [0, 1] onto the viridis colour map (dark purple → yellow), which is
// perceptually uniform and readable with colour-vision deficiencies. It interpolates
// linearly between nine anchors.
func viridis(t float64) color.NRGBA {
	anchors := [...][3]float64{
		{68, 1, 84}, {71, 44, 122}, {59, 81, 139}, {44, 113, 142}, {33, 144, 141},
		{39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37},
	}
	t = max(0, min(1, t))
	f := t * float64(len(anchors)-1)
	i := min(int(f), len(anchors)-2)
	u := f - float64(i)
	var c [3]uint8
	for k := range c {
		c[k] = uint8(math.Round(anchors[i][k] + u*(anchors[i+1][k]-anchors[i][k])))
	}
	return color.NRGBA{c[0], c[1], c[2], 0xff}
}

// heatCells draws the cells of a ξ matrix: row i at y = n−1−i, column j at x = j.
type heatCells struct {
	m      XiMatrix
	lo, hi float64
}

// Plot implements plot.Plotter.
func (h *heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(h.m.Configs)
	sty := p.X.Tick.Label
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	sty.Font.Size = vg.Points(8)
	if n > 12 {
		sty.Font.Size = vg.Points(6)
	}
	hatch := draw.LineStyle{Color: color.Gray{Y: 0xa0}, Width: vg.Points(0.5)}
	border := draw.LineStyle{Color: color.White, Width: vg.Points(1)}
	for i := range n {
		for j := range n {
			y := float64(n - 1 - i)
			x0, x1 := trX(float64(j)-0.5), trX(float64(j)+0.5)
			y0, y1 := trY(y-0.5), trY(y+0.5)
			rect := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			mid := vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}
			v := h.m.Xi[i][j]
			if math.IsNaN(v) {
				c.FillPolygon(color.Gray{Y: 0xf2}, rect)
				c.StrokeLines(hatch, hatchLines(x0, y0, x1-x0, y1-y0, vg.Points(4))...)
				s := sty
				s.Color = color.Gray{Y: 0x40}
				c.FillText(s, mid, "n/a")
			} else {
				t := 0.5
				if h.hi > h.lo {
					t = (v - h.lo) / (h.hi - h.lo)
				}
				c.FillPolygon(viridis(t), rect)
				s := sty
				s.Color = color.Black
				if t < 0.6 {
					s.Color = color.White
				}
				c.FillText(s, mid, fmtFixed(v, 2))
			}
			c.StrokeLines(border, append(rect, rect[0]))
		}
	}
}

// hatchLines returns 45° lines spaced gap apart that cover the rectangle at (x0, y0) of size
// w × h.
func hatchLines(x0, y0, w, h, gap vg.Length) [][]vg.Point {
	var out [][]vg.Point
	for d := -h; d < w; d += gap {
		// The line x = x0 + d + (y − y0), clipped to the rectangle.
		ya := max(0, -d)
		yb := min(h, w-d)
		if ya < yb {
			out = append(out, []vg.Point{{X: x0 + d + ya, Y: y0 + ya}, {X: x0 + d + yb, Y: y0 + yb}})
		}
	}
	return out
}

// DataRange implements plot.DataRanger.
func (h *heatCells) DataRange() (xmin, xmax, ymin, ymax float64) {
	n := float64(len(h.m.Configs))
	return -0.5, n - 0.5, -0.5, n - 0.5
}

// XiHeatMap draws the ξ matrix of one mode and GPU count as a heat map: rows are the slowed
// job, columns its partner, each cell coloured on the viridis scale and labelled with ξ;
// pairs missing from the profile are hatched and labelled "n/a".
func XiHeatMap(t *profile.Table, s PairSlice) (*Figure, error) {
	m := SlowdownMatrix(t, s)
	n := len(m.Configs)
	if n == 0 {
		return nil, fmt.Errorf("analysis: heat map: the profile has no %s pairs", s)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range m.Xi {
		for _, v := range row {
			if !math.IsNaN(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	lo = min(lo, 1)
	title := fmt.Sprintf("Pairwise slowdown ξ (%s) — %s", s, t.GPU)
	p := newPlot(title, "partner (model, batch/sub-batch)", "job (model/batch/sub-batch)")
	p.Add(&heatCells{m: m, lo: lo, hi: hi})
	xNames := make([]string, n)
	yNames := make([]string, n)
	for i, c := range m.Configs {
		xNames[i] = c.Model + "\n" + strconv.Itoa(c.Batch) + "/" + strconv.Itoa(c.SubBatch)
		yNames[n-1-i] = c.String()
	}
	p.NominalX(xNames...)
	p.NominalY(yNames...)
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Tick.Label.Font.Size = vg.Points(7.5)
	p.Y.Tick.Label.Font.Size = vg.Points(7.5)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	// A legend explaining the colours and the hatching.
	leg := newLegend()
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		tv := 0.5
		if hi > lo {
			tv = (v - lo) / (hi - lo)
		}
		leg.Add("ξ = "+fmtFixed(v, 2), swatch{fill: viridis(tv)})
	}
	leg.Add("n/a: not profiled", swatch{fill: color.Gray{Y: 0xf2}, hatched: true})
	side := vg.Length(max(10, 1.6*float64(n)+4)) * vg.Centimeter
	return single(p, leg, side+4*vg.Centimeter, side), nil
}

// swatch is a legend thumbnail: a filled square, optionally hatched.
type swatch struct {
	fill    color.Color
	hatched bool
}

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.fill, r)
	if s.hatched {
		c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 0xa0}, Width: vg.Points(0.5)},
			hatchLines(c.Min.X, c.Min.Y, c.Max.X-c.Min.X, c.Max.Y-c.Min.Y, vg.Points(3))...)
	}
}

// SubBatchFigure draws, for one model of a profile, the solo step time (left) and the memory
// per GPU (right) against the sub-batch size, one line per batch (and GPU count for step
// times). Memory series made of estimates are dashed and labelled "(estimate)".
func SubBatchFigure(t *profile.Table, model string) (*Figure, error) {
	m := t.Model(model)
	if m == nil {
		return nil, fmt.Errorf("analysis: sub-batch plot: model %q not in the profile (models: %s)", model, strings.Join(t.ModelNames(), ", "))
	}
	stepP := newPlot("Step time vs sub-batch — "+model, "sub-batch (samples per micro-step, log scale)", "step time (ms)")
	memP := newPlot("Memory vs sub-batch — "+model, "sub-batch (samples per micro-step, log scale)", "memory per GPU (GiB)")
	leg := newLegend()
	batches := map[int][]profile.Solo{}
	subs := map[int]bool{}
	for _, c := range m.Configs {
		batches[c.Batch] = append(batches[c.Batch], c)
		subs[c.SubBatch] = true
	}
	batchList := slices.Sorted(maps.Keys(batches))
	counts := gpuCounts(&profile.Table{Models: []profile.Model{*m}})
	// Colour identifies the batch; dash and marker the GPU count.
	batchStyle := func(bi, gi int) seriesStyle {
		st := styleFor("", bi)
		st.Dashes = dashPattern(gi)
		st.Marker = gi
		return st
	}
	allEst, anyMem := true, false
	for bi, b := range batchList {
		cfgs := batches[b]
		for gi, g := range counts {
			var pts plotter.XYs
			for _, c := range cfgs {
				if v, ok := c.IterS[g]; ok {
					pts = append(pts, plotter.XY{X: math.Log10(float64(c.SubBatch)), Y: v * 1000})
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, sc, err := lineWithMarkers(pts, batchStyle(bi, gi))
			if err != nil {
				return nil, fmt.Errorf("analysis: sub-batch plot %s: %w", model, err)
			}
			stepP.Add(l, sc)
			leg.Add(fmt.Sprintf("batch %d, %d GPU%s", b, g, plural(g)), l, sc)
		}
		var pts plotter.XYs
		est, meas := 0, 0
		for _, c := range cfgs {
			if c.MemBytes <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: math.Log10(float64(c.SubBatch)), Y: float64(c.MemBytes) / gib})
			if c.MemEstimated {
				est++
			} else {
				meas++
			}
		}
		if len(pts) == 0 {
			continue
		}
		anyMem = true
		allEst = allEst && meas == 0
		st := batchStyle(bi, 0)
		if est > 0 {
			// Estimates: dashed line, hollow markers, and a legend entry saying so.
			st.Dashes = dashPattern(1)
			st.Marker = 4
		}
		l, sc, err := lineWithMarkers(pts, st)
		if err != nil {
			return nil, fmt.Errorf("analysis: sub-batch plot %s: %w", model, err)
		}
		memP.Add(l, sc)
		switch {
		case est > 0 && meas == 0:
			leg.Add(fmt.Sprintf("batch %d memory (estimate)", b), l, sc)
		case est > 0:
			leg.Add(fmt.Sprintf("batch %d memory (partly estimated)", b), l, sc)
		}
	}
	switch {
	case !anyMem:
		memP.Title.Text += " (no memory data)"
	case allEst:
		memP.Title.Text += " (estimate)"
	}
	// The x axis is logarithmic (sub-batches are usually powers of two): the data are
	// log10(sub-batch), labelled with the sub-batch values.
	var ticks plot.ConstantTicks
	for _, s := range slices.Sorted(maps.Keys(subs)) {
		ticks = append(ticks, plot.Tick{Value: math.Log10(float64(s)), Label: strconv.Itoa(s)})
	}
	for _, p := range []*plot.Plot{stepP, memP} {
		p.X.Tick.Marker = ticks
		p.Y.Min = 0
		if len(subs) == 1 {
			// One sub-batch: widen the range by a factor of two on each side.
			p.X.Min, p.X.Max = ticks[0].Value-math.Log10(2), ticks[0].Value+math.Log10(2)
		}
	}
	return &Figure{Plots: [][]*plot.Plot{{stepP, memP}}, Legend: leg, Width: 24 * vg.Centimeter, Height: 9 * vg.Centimeter}, nil
}

// lineWithMarkers returns a line and its markers in a style.
func lineWithMarkers(pts plotter.XYs, st seriesStyle) (*plotter.Line, *plotter.Scatter, error) {
	l, err := lineFor(pts, st)
	if err != nil {
		return nil, nil, err
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: st.Color, Radius: vg.Points(2.6), Shape: markerShape(st.Marker)}
	return l, sc, nil
}

// NamedFigure is a figure with a file base name (without extension).
type NamedFigure struct {
	// Name is the file base name, e.g. "xi-timeslice-1gpu".
	Name string
	// Figure is the figure.
	Figure *Figure
}

// ProfileFigures returns every figure of a profile: one ξ heat map per sharing mode and GPU
// count ("xi-<mode>-<g>gpu") and one sub-batch figure per model ("subbatch-<model>").
func ProfileFigures(t *profile.Table) ([]NamedFigure, error) {
	var out []NamedFigure
	for _, s := range PairSlices(t) {
		f, err := XiHeatMap(t, s)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedFigure{Name: fmt.Sprintf("xi-%s-%dgpu", fileSafe(string(s.Mode)), s.GPUs), Figure: f})
	}
	for _, m := range t.ModelNames() {
		f, err := SubBatchFigure(t, m)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedFigure{Name: "subbatch-" + fileSafe(m), Figure: f})
	}
	return out, nil
}

// fileSafe keeps letters, digits, '.', '-' and '_' and replaces everything else with '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
