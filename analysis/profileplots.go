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

// heatCells draws the cells of a ξ matrix: row i at y = n−1−i, column j at x = j. With
// labels, every cell carries its value; without, thicker white lines separate the blocks of
// configurations of one model (blocks[k] is the first index of model k).
type heatCells struct {
	m      XiMatrix
	lo, hi float64
	labels bool
	blocks []int
}

// Plot implements plot.Plotter.
func (h *heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(h.m.Configs)
	sty := p.X.Tick.Label
	sty.Rotation = 0
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	if n > 12 {
		sty.Font.Size *= 0.85
	}
	hatch := draw.LineStyle{Color: color.Gray{Y: 0xa0}, Width: vg.Points(0.5)}
	border := draw.LineStyle{Color: color.White, Width: vg.Points(1)}
	if !h.labels {
		border.Width = vg.Points(0.25)
	}
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
				if h.labels {
					s := sty
					s.Color = color.Gray{Y: 0x40}
					c.FillText(s, mid, "n/a")
				}
			} else {
				t := h.unit(v)
				c.FillPolygon(viridis(t), rect)
				if h.labels {
					s := sty
					s.Color = color.Black
					if t < 0.6 {
						s.Color = color.White
					}
					c.FillText(s, mid, fmtFixed(v, 2))
				}
			}
			c.StrokeLines(border, append(rect, rect[0]))
		}
	}
	// Block separators between models.
	sep := draw.LineStyle{Color: color.White, Width: vg.Points(1.6)}
	for _, b := range h.blocks {
		if b == 0 {
			continue
		}
		x := trX(float64(b) - 0.5)
		y := trY(float64(n-b) - 0.5)
		c.StrokeLine2(sep, x, trY(-0.5), x, trY(float64(n)-0.5))
		c.StrokeLine2(sep, trX(-0.5), y, trX(float64(n)-0.5), y)
	}
}

// unit maps v onto [0, 1] of the colour scale.
func (h *heatCells) unit(v float64) float64 {
	if h.hi > h.lo {
		return (v - h.lo) / (h.hi - h.lo)
	}
	return 0.5
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

// maxLabelledCells is the largest matrix whose cells are labelled with their values; larger
// ones are drawn as colour only, with one axis label per model (see XiModelHeatMap for a
// labelled per-model summary).
const maxLabelledCells = 16

// XiHeatMap draws the ξ matrix of one mode and GPU count as a heat map: rows are the slowed
// job, columns its partner, each cell coloured on the viridis scale, keyed by a colour bar;
// pairs missing from the profile are hatched. Up to 16 configurations every cell is labelled
// with ξ and every configuration named; larger matrices are drawn as colour only, with one
// axis label per model and white lines between the models' blocks.
func XiHeatMap(t *profile.Table, s PairSlice) (*Figure, error) {
	m := SlowdownMatrix(t, s)
	if len(m.Configs) == 0 {
		return nil, fmt.Errorf("analysis: heat map: the profile has no %s pairs", s)
	}
	title := fmt.Sprintf("Pairwise slowdown ξ (%s) — %s", s, t.GPU)
	return heatMapFigure(m, title, len(m.Configs) <= maxLabelledCells), nil
}

// XiModelHeatMap draws a labelled heat map of one configuration per model, for profiles
// whose full matrix (XiHeatMap) is too large to label: for each model the configuration with
// its full batch as sub-batch that has the most profiled pairs (ties: the larger batch).
func XiModelHeatMap(t *profile.Table, s PairSlice) (*Figure, error) {
	full := SlowdownMatrix(t, s)
	if len(full.Configs) == 0 {
		return nil, fmt.Errorf("analysis: heat map: the profile has no %s pairs", s)
	}
	var keep []int
	for _, b := range modelBlocks(full.Configs) {
		best := -1
		for i := b[0]; i < b[1]; i++ {
			c := full.Configs[i]
			if best < 0 {
				best = i
				continue
			}
			bc := full.Configs[best]
			score := func(k int) int {
				n := 0
				for j := range full.Configs {
					if !math.IsNaN(full.Xi[k][j]) {
						n++
					}
					if !math.IsNaN(full.Xi[j][k]) {
						n++
					}
				}
				return n
			}
			cFull, bFull := c.SubBatch == c.Batch, bc.SubBatch == bc.Batch
			switch {
			case cFull != bFull:
				if cFull {
					best = i
				}
			case score(i) != score(best):
				if score(i) > score(best) {
					best = i
				}
			case c.Batch > bc.Batch:
				best = i
			}
		}
		keep = append(keep, best)
	}
	m := XiMatrix{Slice: full.Slice}
	for _, i := range keep {
		m.Configs = append(m.Configs, full.Configs[i])
		row := make([]float64, 0, len(keep))
		for _, j := range keep {
			row = append(row, full.Xi[i][j])
		}
		m.Xi = append(m.Xi, row)
	}
	title := fmt.Sprintf("Pairwise slowdown ξ per model (%s) — %s", s, t.GPU)
	return heatMapFigure(m, title, true), nil
}

// modelBlocks returns the [first, end) index ranges of the configurations of each model in
// cfgs (sorted by model).
func modelBlocks(cfgs []profile.Config) [][2]int {
	var out [][2]int
	for i, c := range cfgs {
		if i == 0 || c.Model != cfgs[i-1].Model {
			out = append(out, [2]int{i, i})
		}
		out[len(out)-1][1] = i + 1
	}
	return out
}

// heatMapFigure draws a ξ matrix, labelled cell by cell or as colour with model blocks.
func heatMapFigure(m XiMatrix, title string, labels bool) *Figure {
	n := len(m.Configs)
	lo, hi := math.Inf(1), math.Inf(-1)
	missing := false
	for _, row := range m.Xi {
		for _, v := range row {
			if math.IsNaN(v) {
				missing = true
			} else {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 1
	}
	lo = min(lo, 1)
	p := newPlot(title, "partner (model/batch/sub-batch)", "job (model/batch/sub-batch)")
	hc := &heatCells{m: m, lo: lo, hi: hi, labels: labels}
	p.Add(hc)
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Tick.Label.Font.Size = vg.Points(7.5)
	p.Y.Tick.Label.Font.Size = vg.Points(7.5)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	var cell, extraH vg.Length
	if labels {
		xNames := make([]string, n)
		yNames := make([]string, n)
		for i, c := range m.Configs {
			xNames[i] = c.Model + "\n" + strconv.Itoa(c.Batch) + "/" + strconv.Itoa(c.SubBatch)
			yNames[n-1-i] = c.String()
		}
		p.NominalX(xNames...)
		p.NominalY(yNames...)
		cell = 1.15 * vg.Centimeter
		widest := vg.Length(0)
		for _, c := range m.Configs {
			widest = max(widest, p.X.Tick.Label.Width(c.Model))
		}
		if widest > 0.95*cell {
			// Names too wide for their column: one line each, turned by 45°.
			var xt plot.ConstantTicks
			for i, c := range m.Configs {
				xt = append(xt, plot.Tick{Value: float64(i), Label: c.String()})
			}
			p.X.Tick.Marker = xt
			p.X.Tick.Label.Rotation = math.Pi / 4
			p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
			for _, t := range xt {
				extraH = max(extraH, p.X.Tick.Label.Width(t.Label)*0.71)
			}
		}
	} else {
		// One label per model, at the centre of its block; a small tick per configuration.
		var xt, yt plot.ConstantTicks
		for _, b := range modelBlocks(m.Configs) {
			mid := float64(b[0]+b[1]-1) / 2
			name := m.Configs[b[0]].Model
			xt = append(xt, plot.Tick{Value: mid, Label: name})
			yt = append(yt, plot.Tick{Value: float64(n-1) - mid, Label: name})
			hc.blocks = append(hc.blocks, b[0])
		}
		p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
		for _, t := range xt {
			extraH = max(extraH, p.X.Tick.Label.Width(t.Label))
		}
		p.X.Label.Text, p.Y.Label.Text = "partner (blocks: the model's configurations by batch/sub-batch)", "job"
		cell = max(0.25*vg.Centimeter, min(0.5*vg.Centimeter, 18*vg.Centimeter/vg.Length(n)))
	}
	side := max(8*vg.Centimeter, vg.Length(n)*cell)
	f := &Figure{Plots: [][]*plot.Plot{{p}}, Width: side + 4.5*vg.Centimeter, Height: side + 3*vg.Centimeter + extraH}
	f.heat = hc
	f.cbar = &colorBar{lo: lo, hi: hi, cmap: viridis, label: "ξ", text: p.Y.Tick.Label}
	f.cbar.text.Font.Size = vg.Points(baseFontSize)
	if missing {
		leg := newLegend()
		leg.Add("not profiled", swatch{fill: color.Gray{Y: 0xf2}, hatched: true})
		f.Legend = leg
		f.Width += leg.width()
	}
	f.Width += f.cbar.width()
	return f
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

// subBatchColors are the batch colours of sub-batch figures (Okabe–Ito without yellow,
// which is too faint for lines).
var subBatchColors = []color.NRGBA{oiBlue, oiVermilion, oiGreen, oiPurple, oiSkyBlue, oiGrey, oiOrange}

// maxSubBatchCounts is the most GPU counts a sub-batch figure draws.
const maxSubBatchCounts = 5

// SubBatchFigure draws, for one model of a profile, the solo step time (left) and the memory
// per GPU (right) against the sub-batch size: colour identifies the batch, dash pattern and
// marker the GPU count, and the legend lists the two keys separately. With more than five GPU
// counts only the powers of two (at most five) are drawn, and the title says so. Memory
// series made of estimates are dashed with hollow markers and labelled "estimate".
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
	if len(counts) > maxSubBatchCounts {
		// Too many lines to read: the powers of two only (at most maxSubBatchCounts).
		var pow []int
		for _, g := range counts {
			if g&(g-1) == 0 && len(pow) < maxSubBatchCounts {
				pow = append(pow, g)
			}
		}
		stepP.Title.Text += fmt.Sprintf(" (%d of %d GPU counts)", len(pow), len(counts))
		counts = pow
	}
	style := func(bi, gi int) seriesStyle {
		return seriesStyle{Color: subBatchColors[bi%len(subBatchColors)], Dashes: dashPattern(gi), Marker: gi}
	}
	usedCounts := map[int]bool{}
	allEst, anyMem, anyEst := true, false, false
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
			usedCounts[gi] = true
			l, sc, err := lineWithMarkers(pts, style(bi, gi))
			if err != nil {
				return nil, fmt.Errorf("analysis: sub-batch plot %s: %w", model, err)
			}
			stepP.Add(l, sc)
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
		st := style(bi, 0)
		if est > 0 {
			// Estimates: dashed line, hollow markers.
			st.Dashes, st.Marker = dashPattern(1), 7
			anyEst = true
		}
		l, sc, err := lineWithMarkers(pts, st)
		if err != nil {
			return nil, fmt.Errorf("analysis: sub-batch plot %s: %w", model, err)
		}
		memP.Add(l, sc)
	}
	// The legend: one colour entry per batch, one dash/marker entry per GPU count.
	for bi, b := range batchList {
		name := fmt.Sprintf("batch %d", b)
		leg.Add(name, swatch{fill: style(bi, 0).Color})
	}
	for gi, g := range counts {
		if !usedCounts[gi] {
			continue
		}
		l, sc, err := lineWithMarkers(plotter.XYs{{}}, seriesStyle{Color: color.NRGBA{0x30, 0x30, 0x30, 0xff}, Dashes: dashPattern(gi), Marker: gi})
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%d GPU%s", g, plural(g))
		leg.Add(name, l, sc)
	}
	if anyEst {
		l, sc, err := lineWithMarkers(plotter.XYs{{}}, seriesStyle{Color: color.NRGBA{0x30, 0x30, 0x30, 0xff}, Dashes: dashPattern(1), Marker: 7})
		if err != nil {
			return nil, err
		}
		leg.Add("memory estimate", l, sc)
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
	w := 21*vg.Centimeter + leg.width()
	return &Figure{Plots: [][]*plot.Plot{{stepP, memP}}, Legend: leg, Width: w, Height: 9 * vg.Centimeter}, nil
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

// ProfileFigures returns every figure of a profile: the ξ heat maps (XiFigures) and one
// sub-batch figure per model ("subbatch-<model>").
func ProfileFigures(t *profile.Table) ([]NamedFigure, error) {
	out, err := XiFigures(t)
	if err != nil {
		return nil, err
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

// XiFigures returns one ξ heat map per sharing mode and GPU count ("xi-<mode>-<g>gpu") and, for
// matrices too large to label, also the per-model one ("xi-<mode>-<g>gpu-models", see
// XiModelHeatMap).
func XiFigures(t *profile.Table) ([]NamedFigure, error) {
	var out []NamedFigure
	for _, s := range PairSlices(t) {
		f, err := XiHeatMap(t, s)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("xi-%s-%dgpu", fileSafe(string(s.Mode)), s.GPUs)
		out = append(out, NamedFigure{Name: name, Figure: f})
		if len(SlowdownMatrix(t, s).Configs) > maxLabelledCells {
			f, err := XiModelHeatMap(t, s)
			if err != nil {
				return nil, err
			}
			out = append(out, NamedFigure{Name: name + "-models", Figure: f})
		}
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
