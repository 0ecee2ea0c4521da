package analysis

import (
	"errors"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sharebench/sharebench/results"
)

// Figure sizes.
const (
	figWidth  = 16 * vg.Centimeter
	figHeight = 10 * vg.Centimeter
)

// Cell is the set of runs that are compared with each other in one figure: same experiment,
// trace and setting (see Group), all series and seeds.
type Cell struct {
	// Experiment, Trace and Setting are those of the cell's groups (see Group).
	Experiment, Trace, Setting string
	// Groups are the cell's groups, one per series, in display order.
	Groups []*Group
}

// Name is "experiment / trace" (or just the trace) for titles.
func (c *Cell) Name() string {
	if c.Experiment != "" {
		return c.Experiment + " / " + c.Trace
	}
	return c.Trace
}

// Runs returns the runs of every group of the cell.
func (c *Cell) Runs() []*results.Run {
	var out []*results.Run
	for _, g := range c.Groups {
		out = append(out, g.Runs...)
	}
	return out
}

// Cells splits runs into cells, sorted by experiment, trace and setting.
func Cells(runs []*results.Run) ([]*Cell, error) {
	groups, err := GroupRuns(runs)
	if err != nil {
		return nil, err
	}
	var cells []*Cell
	for _, g := range groups {
		if n := len(cells); n > 0 && cells[n-1].Experiment == g.Experiment && cells[n-1].Trace == g.Trace && cells[n-1].Setting == g.Setting {
			cells[n-1].Groups = append(cells[n-1].Groups, g)
			continue
		}
		cells = append(cells, &Cell{Experiment: g.Experiment, Trace: g.Trace, Setting: g.Setting, Groups: []*Group{g}})
	}
	return cells, nil
}

// oneCell returns the only cell of runs, or an error that lists the cells.
func oneCell(runs []*results.Run, what string) (*Cell, error) {
	cells, err := Cells(runs)
	if err != nil {
		return nil, err
	}
	switch len(cells) {
	case 0:
		return nil, fmt.Errorf("analysis: %s: no runs", what)
	case 1:
		return cells[0], nil
	}
	var settings []string
	for _, c := range cells {
		settings = append(settings, c.Setting)
	}
	vary := varyingSettings(settings)
	var names []string
	for _, c := range cells {
		n := c.Name()
		if v := vary[c.Setting]; v != "" {
			n += " [" + v + "]"
		}
		names = append(names, n)
	}
	return nil, fmt.Errorf("analysis: %s: the runs span %d experiment/trace/setting cells (%s); plot one at a time", what, len(cells), strings.Join(names, "; "))
}

// newPlot returns a plot with the common style: title, axis labels with units, round tick
// values and a light grid. Legends go outside the plot (Figure.Legend).
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(9.5)
		a.Tick.Label.Font.Size = vg.Points(8.5)
	}
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe0}
	g.Horizontal.Color = color.Gray{Y: 0xe0}
	g.Vertical.Width = vg.Points(0.5)
	g.Horizontal.Width = vg.Points(0.5)
	p.Add(g)
	return p
}

// lineFor returns a line plotter with the style of a series.
func lineFor(xys plotter.XYs, st seriesStyle) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = st.Color
	l.Width = vg.Points(1.6)
	l.Dashes = st.Dashes
	return l, nil
}

// seriesNames returns the series of a cell in display order.
func (c *Cell) seriesNames() []string {
	var names []string
	for _, g := range c.Groups {
		names = append(names, g.Series)
	}
	return names
}

// CDFOptions configures the CDF figures.
type CDFOptions struct {
	// LogX forces a log x axis (the same as XScale: ScaleLog).
	LogX bool
	// XScale is the x axis scale; with ScaleAuto (the default) the axis is logarithmic when
	// the positive values span more than a decade.
	XScale Scale
	// Title overrides the default title.
	Title string
}

// xScale resolves LogX and XScale.
func (o CDFOptions) xScale() Scale {
	if o.LogX {
		return ScaleLog
	}
	return o.XScale
}

// JCTCDF draws the empirical CDF of job completion time, one step line per series, for the
// runs of one cell (experiment, trace, setting); the jobs of all seeds of a series are pooled.
func JCTCDF(runs []*results.Run, opt CDFOptions) (*Figure, error) {
	c, err := oneCell(runs, "JCT CDF")
	if err != nil {
		return nil, err
	}
	title := orDefault(opt.Title, "JCT distribution — "+c.Name())
	return cdfFigure(c, title, "job completion time", func(j *results.JobRow) float64 { return j.JCTS }, opt.xScale())
}

// QueueCDF draws the empirical CDF of queueing delay (total time pending), like JCTCDF. On a
// log axis, zero delays are drawn at a floor one decade below the smallest positive delay,
// whose tick is labelled 0.
func QueueCDF(runs []*results.Run, opt CDFOptions) (*Figure, error) {
	c, err := oneCell(runs, "queueing-delay CDF")
	if err != nil {
		return nil, err
	}
	title := orDefault(opt.Title, "Queueing delay distribution — "+c.Name())
	return cdfFigure(c, title, "queueing delay", func(j *results.JobRow) float64 { return j.QueueS }, opt.xScale())
}

// withLogScale adds "log scale" to an axis label: "memory (GiB)" → "memory (GiB, log scale)".
func withLogScale(label string) string {
	if strings.HasSuffix(label, ")") {
		return strings.TrimSuffix(label, ")") + ", log scale)"
	}
	return label + " (log scale)"
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func cdfFigure(c *Cell, title, quantity string, value func(*results.JobRow) float64, scale Scale) (*Figure, error) {
	samples := map[string][]float64{}
	var all []float64
	for _, g := range c.Groups {
		for _, r := range g.Runs {
			for i := range r.Jobs {
				v := value(&r.Jobs[i])
				samples[g.Series] = append(samples[g.Series], v)
				all = append(all, v)
			}
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("analysis: %s: the runs have no jobs", title)
	}
	ax, err := newValueAxis(all, true, scale, true)
	if err != nil {
		// A log axis was asked for, but every value is 0: draw it linearly.
		ax, _ = newValueAxis(all, true, ScaleLinear, true)
	}
	xLabel := ax.label(quantity, "")
	if ax.zero {
		xLabel = strings.TrimSuffix(xLabel, ")") + "; 0 at the left edge)"
	}
	p := newPlot(title, xLabel, "fraction of jobs ≤ x")
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Tick.Marker = ax.ticker()
	if ax.log {
		p.X.Min = ax.pos(ax.floor)
	} else {
		p.X.Min = 0
	}
	leg := newLegend()
	names := c.seriesNames()
	sty := styles(names)
	for _, name := range names {
		xs := samples[name]
		if len(xs) == 0 {
			continue
		}
		ex, ef := ECDF(xs)
		pts := make(plotter.XYs, 0, len(ex)+1)
		pts = append(pts, plotter.XY{X: ax.pos(ex[0]), Y: 0})
		for i := range ex {
			pts = append(pts, plotter.XY{X: ax.pos(ex[i]), Y: ef[i]})
		}
		l, err := lineFor(pts, sty[name])
		if err != nil {
			return nil, fmt.Errorf("analysis: %s: %w", title, err)
		}
		l.StepStyle = plotter.PostStep
		p.Add(l)
		leg.Add(fmt.Sprintf("%s (%d jobs)", name, len(xs)), l)
	}
	return single(p, leg, figWidth, figHeight), nil
}

// BarOptions configures AvgJCTBars.
type BarOptions struct {
	// Metric is the bar height; the average JCT when zero.
	Metric Metric
	// YScale is the y axis scale; with ScaleAuto (the default) the axis is logarithmic when
	// the bar heights span more than a decade.
	YScale Scale
	// Title overrides the default title.
	Title string
	// Normalize, when set, draws each run's metric divided by that of this series' run of the
	// same cell and seed: bars of the mean per-seed ratio with its 95% CI, on a linear axis
	// with a line at 1, in place of raw values that a log axis would need.
	Normalize string
	// Exclude leaves these series out (e.g. fifo, far off the scale of normalized bars).
	Exclude []string
	// OffScale, when > 0, leaves out a series whose height exceeds it in some cell, and names
	// it in the title: one series far above the others would squeeze them against the axis.
	OffScale float64
}

// isTimeMetric reports whether a metric is a duration in seconds (its label ends in "(s)").
func isTimeMetric(m Metric) bool { return strings.HasSuffix(m.Label, " (s)") }

// metricQuantity splits a metric label into the quantity and its non-time unit:
// "average JCT (s)" → "average JCT", ""; "GPU utilization (%)" → "GPU utilization", "%".
func metricQuantity(m Metric) (q, unit string) {
	q, u, ok := strings.Cut(m.Label, " (")
	if !ok || isTimeMetric(m) {
		return q, ""
	}
	return q, strings.TrimSuffix(u, ")")
}

// AvgJCTBars draws grouped bars: one group per cell (experiment, trace, setting), one bar per
// series in the fixed policy order, height = mean over seeds of the metric (average JCT by
// default), with 95% CI error bars where a series has two or more seeds. Time metrics are
// drawn in s, min, h or days, or on a log axis labelled with durations.
func AvgJCTBars(runs []*results.Run, opt BarOptions) (*Figure, error) {
	m := opt.Metric
	if m.Value == nil {
		m, _ = MetricByName("avg-jct")
	}
	cells, err := Cells(runs)
	if err != nil {
		return nil, err
	}
	if len(cells) == 0 {
		return nil, errors.New("analysis: bar chart: no runs")
	}
	var settings []string
	experiments := map[string]bool{}
	for _, c := range cells {
		settings = append(settings, c.Setting)
		experiments[c.Experiment] = true
	}
	vary := varyingSettings(settings)
	var catNames []string
	seriesSet := map[string]bool{}
	for _, c := range cells {
		n := c.Trace
		if len(experiments) > 1 {
			n = c.Name()
		}
		// One line per varying setting key, so that long settings do not run into the
		// neighbouring categories.
		for _, kv := range strings.Fields(vary[c.Setting]) {
			n += "\n" + kv
		}
		catNames = append(catNames, n)
		for _, g := range c.Groups {
			if !slices.Contains(opt.Exclude, g.Series) {
				seriesSet[g.Series] = true
			}
		}
	}
	names := make([]string, 0, len(seriesSet))
	for n := range seriesSet {
		names = append(names, n)
	}
	SortSeries(names)
	sty := styles(names)
	title := opt.Title
	if title == "" {
		q, _ := metricQuantity(m)
		title = capitalize(q + " per policy")
		if len(experiments) == 1 {
			for e := range experiments {
				if e != "" {
					title += " — " + e
				}
			}
		}
	}
	// The estimates, per series and cell.
	est := map[string][]*Estimate{}
	var heights []float64
	anyCI := false
	for _, name := range names {
		est[name] = make([]*Estimate, len(cells))
		for i, c := range cells {
			var base *Group
			for _, g := range c.Groups {
				if g.Series == opt.Normalize {
					base = g
				}
			}
			for _, g := range c.Groups {
				if g.Series != name {
					continue
				}
				var e Estimate
				switch {
				case opt.Normalize == "":
					e = g.Estimate(m.Value)
				case base == nil:
					continue
				default:
					e = pairedRatio(g, base, m.Value)
					if e.N == 0 {
						continue
					}
				}
				est[name][i] = &e
				heights = append(heights, e.Mean)
				anyCI = anyCI || e.HasCI()
			}
		}
	}
	if opt.OffScale > 0 {
		var kept, off []string
		heights = heights[:0]
		for _, name := range names {
			out := false
			for _, e := range est[name] {
				out = out || e != nil && e.Mean > opt.OffScale
			}
			if out {
				off = append(off, name)
				continue
			}
			kept = append(kept, name)
			for _, e := range est[name] {
				if e != nil {
					heights = append(heights, e.Mean)
				}
			}
		}
		if len(off) > 0 && len(kept) > 0 {
			names = kept
			title += offScaleNote(off, opt.OffScale)
		}
	}
	q, unit := metricQuantity(m)
	isTime, yScale := isTimeMetric(m), opt.YScale
	if opt.Normalize != "" {
		isTime, yScale, unit = false, ScaleLinear, ""
		q += " ÷ " + opt.Normalize + "'s"
	}
	ax, err := newValueAxis(heights, isTime, yScale, false)
	if err != nil {
		return nil, fmt.Errorf("analysis: bar chart: %s: %w", q, err)
	}
	yLabel := ax.label(q, unit)
	if anyCI {
		yLabel += ", mean ± 95% CI"
	}
	if opt.Normalize != "" {
		yLabel = q + " (paired by seed)"
		if anyCI {
			yLabel += ", mean ± 95% CI"
		}
	}
	p := newPlot(title, "", yLabel)
	p.Y.Tick.Marker = ax.ticker()
	if opt.Normalize != "" {
		p.Add(&hLine{y: 1})
	}
	leg := newLegend()
	k := len(names)
	width := 0.8 / float64(k)
	top := math.Inf(-1)
	base := 0.0
	if ax.log {
		base = ax.pos(ax.floor)
	}
	for j, name := range names {
		b := &bars{n: len(cells), style: sty[name], base: base, offset: -0.4 + (float64(j)+0.5)*width, width: width}
		for _, e := range est[name] {
			v, lo, hi := math.NaN(), math.NaN(), math.NaN()
			if e != nil {
				v = ax.pos(e.Mean)
				top = max(top, v)
				if e.HasCI() {
					lo, hi = ax.pos(e.Lo()), ax.pos(e.Hi())
					top = max(top, hi)
				}
			}
			b.vals, b.lo, b.hi = append(b.vals, v), append(b.lo, lo), append(b.hi, hi)
		}
		p.Add(b)
		leg.Add(name, b)
	}
	p.NominalX(catNames...)
	p.X.Min, p.X.Max = -0.5, float64(len(cells))-0.5
	if ax.log {
		p.Y.Min = base
		p.Y.Max = top + 0.05*(top-base)
	} else {
		p.Y.Min = 0
		p.Y.Max = top * 1.05
		if !(top > 0) {
			p.Y.Max = 1
		}
	}
	f := single(p, leg, figWidth, figHeight)
	f.cats = &categoryFit{p: p, names: catNames}
	return f, nil
}

// offScaleNote is the title's note on the series left out above a figure's scale.
func offScaleNote(names []string, limit float64) string {
	return fmt.Sprintf(" — left out, above %s: %s", strconv.FormatFloat(limit, 'g', -1, 64), strings.Join(names, ", "))
}

// pairedRatio returns the mean over the seeds both groups have of x's metric over base's,
// with its 95% CI; N = 0 when no seed pairs.
func pairedRatio(x, base *Group, m func(*results.Summary) float64) Estimate {
	bySeed := map[uint64]float64{}
	for _, r := range base.Runs {
		bySeed[r.Summary.Seed] = m(&r.Summary)
	}
	var v []float64
	for _, r := range x.Runs {
		if b, ok := bySeed[r.Summary.Seed]; ok && b != 0 {
			v = append(v, m(&r.Summary)/b)
		}
	}
	return CI95(v)
}

// categoryFit keeps the category labels of a bar chart from overlapping: at drawing time,
// when the panel width is known, it shrinks their font down to 6.5 pt and, if that is not
// enough, writes each on one line turned by 30°.
type categoryFit struct {
	p      *plot.Plot
	names  []string
	orig   text.Style  // the labels' style before fitting
	marker plot.Ticker // the labels' ticker before fitting
	saved  bool
}

// fit adapts the labels to a panel of the given width (axes included).
func (f *categoryFit) fit(width vg.Length) {
	p := f.p
	if !f.saved {
		f.orig, f.marker, f.saved = p.X.Tick.Label, p.X.Tick.Marker, true
	}
	p.X.Tick.Label, p.X.Tick.Marker = f.orig, f.marker
	if len(f.names) == 0 {
		return
	}
	// The y axis (tick labels and label) takes about 2.2 cm at the default font size.
	slot := (width - 2.2*vg.Centimeter*vg.Length(f.orig.Font.Size/vg.Points(baseFontSize))) / vg.Length(len(f.names))
	widest := func() vg.Length {
		var w vg.Length
		for _, n := range f.names {
			w = max(w, p.X.Tick.Label.Width(n))
		}
		return w
	}
	for p.X.Tick.Label.Font.Size > vg.Points(6.5) && widest() > 0.92*slot {
		p.X.Tick.Label.Font.Size -= vg.Points(0.5)
	}
	if widest() <= 0.92*slot {
		return
	}
	p.X.Tick.Label.Font.Size = f.orig.Font.Size
	var ticks plot.ConstantTicks
	for i, n := range f.names {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: strings.ReplaceAll(n, "\n", ", ")})
	}
	p.X.Tick.Marker = ticks
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
}

// bars is one series of a grouped bar chart: bar i is centred at i+offset with the given
// width, both in data units, so that error bars line up with their bars. Values are drawn
// coordinates (log10 of the value on a log axis); bars rise from base, the bottom of the axis.
type bars struct {
	n             int
	vals, lo, hi  []float64
	base          float64
	style         seriesStyle
	offset, width float64
}

// Plot implements plot.Plotter.
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	outline := draw.LineStyle{Color: color.Gray{Y: 0x30}, Width: vg.Points(0.5)}
	halo := draw.LineStyle{Color: color.White, Width: vg.Points(1.9)}
	errStyle := draw.LineStyle{Color: color.Black, Width: vg.Points(0.9)}
	for i, v := range b.vals {
		if math.IsNaN(v) {
			continue
		}
		x0 := trX(float64(i) + b.offset - b.width/2)
		x1 := trX(float64(i) + b.offset + b.width/2)
		y0, y1 := trY(b.base), trY(v)
		hatchFill(c, vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}, b.style)
		rect := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.StrokeLines(outline, c.ClipLinesXY(append(rect, rect[0]))...)
		if !math.IsNaN(b.lo[i]) {
			xm := trX(float64(i) + b.offset)
			capW := (x1 - x0) / 4
			lo, hi := trY(b.lo[i]), trY(b.hi[i])
			segs := [][]vg.Point{{{X: xm, Y: lo}, {X: xm, Y: hi}}, {{X: xm - capW, Y: hi}, {X: xm + capW, Y: hi}}}
			if b.lo[i] > b.base {
				// No cap where the interval runs past the bottom of the axis.
				segs = append(segs, []vg.Point{{X: xm - capW, Y: lo}, {X: xm + capW, Y: lo}})
			}
			lines := c.ClipLinesXY(segs...)
			// A white halo keeps the error bar visible on dark bars.
			c.StrokeLines(halo, lines...)
			c.StrokeLines(errStyle, lines...)
		}
	}
}

// DataRange implements plot.DataRanger.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for i, v := range b.vals {
		if !math.IsNaN(v) {
			ymin, ymax = min(ymin, v), max(ymax, v)
		}
		if !math.IsNaN(b.hi[i]) {
			ymax = max(ymax, b.hi[i])
		}
	}
	return -0.5, float64(b.n) - 0.5, ymin, ymax
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (b *bars) Thumbnail(c *draw.Canvas) {
	hatchFill(*c, c.Rectangle, b.style)
	r := c.Rectangle
	c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 0x30}, Width: vg.Points(0.5)},
		[]vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min})
}

// UtilOptions configures UtilOverTime.
type UtilOptions struct {
	// Title overrides the default title.
	Title string
}

// UtilOverTime draws cluster occupancy over time from util.csv for the runs of one cell: the
// percentage of GPUs holding at least one job (top panel) and of GPUs shared by two or more
// jobs (bottom panel), one step line per series. Utilization traces of different seeds are
// not averaged (their time axes differ): each series shows its lowest seed.
func UtilOverTime(runs []*results.Run, opt UtilOptions) (*Figure, error) {
	c, err := oneCell(runs, "utilization")
	if err != nil {
		return nil, err
	}
	names := c.seriesNames()
	sty := styles(names)
	maxT := 0.0
	for _, g := range c.Groups {
		r := g.Runs[0]
		maxT = max(maxT, r.Summary.MakespanS)
		for _, u := range r.Util {
			maxT = max(maxT, u.TS)
		}
	}
	unit, div := timeUnit(maxT)
	title := orDefault(opt.Title, "Cluster occupancy — "+c.Name())
	busy := newPlot(title, "", "busy GPUs (%)")
	shared := newPlot("", fmt.Sprintf("time since trace start (%s)", unit), "shared GPUs (%)")
	leg := newLegend()
	for _, pl := range []*plot.Plot{busy, shared} {
		pl.X.Min, pl.X.Max = 0, maxT/div
		pl.Y.Min, pl.Y.Max = 0, 100
	}
	anyUtil := false
	var neverShared []string
	for _, name := range names {
		var g *Group
		for _, x := range c.Groups {
			if x.Series == name {
				g = x
			}
		}
		r := g.Runs[0]
		if len(r.Util) == 0 {
			continue
		}
		anyUtil = true
		gpus := float64(r.Summary.GPUs)
		if gpus <= 0 {
			return nil, fmt.Errorf("analysis: utilization: %s: summary.json has no GPU count", r.Dir)
		}
		var pb, ps plotter.XYs
		for _, u := range r.Util {
			pb = append(pb, plotter.XY{X: u.TS / div, Y: 100 * u.BusyGPUs / gpus})
			ps = append(ps, plotter.XY{X: u.TS / div, Y: 100 * u.SharedGPUs / gpus})
		}
		end := max(r.Summary.MakespanS, r.Util[len(r.Util)-1].TS) / div
		pb = append(pb, plotter.XY{X: end, Y: pb[len(pb)-1].Y})
		ps = append(ps, plotter.XY{X: end, Y: ps[len(ps)-1].Y})
		label := name
		if len(g.Runs) > 1 {
			label = fmt.Sprintf("%s (seed %d)", name, r.Summary.Seed)
		}
		lb, err := lineFor(pb, sty[name])
		if err != nil {
			return nil, fmt.Errorf("analysis: utilization: %w", err)
		}
		lb.StepStyle = plotter.PostStep
		ls, err := lineFor(ps, sty[name])
		if err != nil {
			return nil, fmt.Errorf("analysis: utilization: %w", err)
		}
		ls.StepStyle = plotter.PostStep
		busy.Add(lb)
		leg.Add(label, lb)
		if slices.ContainsFunc(r.Util, func(u results.UtilRow) bool { return u.SharedGPUs > 0 }) {
			shared.Add(ls)
		} else {
			// A flat line at 0 would hide the others: name the series instead.
			neverShared = append(neverShared, name)
		}
	}
	if len(neverShared) > 0 {
		shared.Title.Text = "never shared a GPU: " + strings.Join(neverShared, ", ")
		shared.Title.TextStyle.Font.Size = vg.Points(baseFontSize)
	}
	if !anyUtil {
		return nil, fmt.Errorf("analysis: utilization: %s: the runs have no util.csv rows", c.Name())
	}
	return &Figure{Plots: [][]*plot.Plot{{busy}, {shared}}, Legend: leg, Width: figWidth, Height: 14 * vg.Centimeter}, nil
}

// CurveOptions configures Curve.
type CurveOptions struct {
	// X is the label (e.g. "gpu_mem_gib" or "labels.gpu_mem_gib") or numeric summary field
	// (gpus, gpu_mem_gib, interval_s) whose value is the x coordinate. Required.
	X string
	// Metric is the y value; the average JCT when zero.
	Metric Metric
	// LogX draws the x axis on a log scale.
	LogX bool
	// YScale is the y axis scale; with ScaleAuto (the default) the axis is logarithmic when
	// the means span more than a decade.
	YScale Scale
	// Title overrides the default title.
	Title string
	// Normalize, when set, divides each run's metric by that of this series' run with the same
	// x and seed: the curve is the mean per-seed ratio with its 95% CI, on a linear axis with
	// a line at 1, so that no series' scale squeezes the others.
	Normalize string
	// Exclude leaves these series out (e.g. fifo, far off the scale of a normalized curve).
	Exclude []string
	// OffScale, when > 0, leaves out a series whose mean exceeds it at some x, and names it in
	// the title (see BarOptions.OffScale).
	OffScale float64
	// XLabel overrides the x axis label.
	XLabel string
	// MarkX, when set, draws a dotted vertical line at this x, labelled MarkXLabel.
	MarkX      *float64
	MarkXLabel string
	// Band, when set, shades the y interval Band[0]..Band[1] (in the metric's units, or as a
	// ratio when normalized), labelled BandLabel in the legend: e.g. the paper's claimed range.
	Band      *[2]float64
	BandLabel string
}

// xLabelFor returns a readable axis label for a known x key.
func xLabelFor(key string) string {
	switch key {
	case "gpu_mem_gib":
		return "GPU memory (GiB)"
	case "gpus":
		return "GPUs"
	case "interval_s":
		return "scheduling interval (s)"
	case "xi_scale":
		return "interference scale s (ξ' = 1 + s·(ξ − 1); s = 1: the profile's measured ξ)"
	case "load":
		return "offered load"
	}
	return key
}

// xValue returns the numeric x coordinate of a run for key.
func xValue(r *results.Run, key string) (float64, error) {
	if v, ok := r.Label(key); ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("analysis: %s: label %s=%q is not a number", r.Dir, key, v)
		}
		return x, nil
	}
	switch key {
	case "gpu_mem_gib":
		return r.Summary.GPUMemGiB, nil
	case "gpus":
		return float64(r.Summary.GPUs), nil
	case "interval_s":
		return r.Summary.IntervalS, nil
	}
	return 0, fmt.Errorf("analysis: %s: no label %q", r.Dir, key)
}

// CurvePoint is one point of a sensitivity curve.
type CurvePoint struct {
	// X is the value of the x label.
	X float64
	// Estimate is the metric's mean over seeds with its 95% CI.
	Estimate
}

// CurveSeries is one line of a sensitivity curve.
type CurveSeries struct {
	// Series is the policy or variant.
	Series string
	// Points are sorted by X.
	Points []CurvePoint
}

// CurveData computes the sensitivity curves of Curve: for each series, the mean of the metric
// over seeds (with its 95% CI) at each x value. All runs must belong to one experiment and
// trace and differ, apart from series and seed, only in x.
func CurveData(runs []*results.Run, opt CurveOptions) ([]CurveSeries, error) {
	key := strings.TrimPrefix(opt.X, "labels.")
	if key == "" {
		return nil, errors.New("analysis: curve: no x label given")
	}
	m := opt.Metric
	if m.Value == nil {
		m, _ = MetricByName("avg-jct")
	}
	groups, err := GroupRuns(runs)
	if err != nil {
		return nil, err
	}
	type pt struct {
		series string
		x      float64
	}
	rest := map[string]bool{}
	var order []pt
	vals := map[pt]map[uint64]float64{}
	seeds := map[pt]map[uint64]string{}
	for _, g := range groups {
		rest[g.Experiment+" / "+g.Trace+" ["+dropKey(g.Setting, key)+"]"] = true
		for _, r := range g.Runs {
			x, err := xValue(r, key)
			if err != nil {
				return nil, err
			}
			k := pt{g.Series, x}
			if seeds[k] == nil {
				seeds[k] = map[uint64]string{}
				vals[k] = map[uint64]float64{}
				order = append(order, k)
			}
			if prev, dup := seeds[k][r.Summary.Seed]; dup {
				return nil, fmt.Errorf("analysis: curve: %s and %s: series %s at %s=%v with the same seed %d; the runs differ in more than %s",
					prev, r.Dir, g.Series, key, x, r.Summary.Seed, key)
			}
			seeds[k][r.Summary.Seed] = r.Dir
			vals[k][r.Summary.Seed] = m.Value(&r.Summary)
		}
	}
	if len(rest) > 1 {
		others := make([]string, 0, len(rest))
		for r := range rest {
			others = append(others, r)
		}
		slices.Sort(others)
		return nil, fmt.Errorf("analysis: curve: the runs differ in more than %s: %s", key, strings.Join(others, "; "))
	}
	bySeries := map[string][]CurvePoint{}
	for _, k := range order {
		if slices.Contains(opt.Exclude, k.series) {
			continue
		}
		var v []float64
		for _, seed := range slices.Sorted(maps.Keys(vals[k])) {
			x := vals[k][seed]
			if opt.Normalize != "" {
				b, ok := vals[pt{opt.Normalize, k.x}][seed]
				if !ok {
					continue
				}
				x /= b
			}
			v = append(v, x)
		}
		if len(v) == 0 {
			continue
		}
		bySeries[k.series] = append(bySeries[k.series], CurvePoint{X: k.x, Estimate: CI95(v)})
	}
	names := make([]string, 0, len(bySeries))
	for n := range bySeries {
		names = append(names, n)
	}
	SortSeries(names)
	out := make([]CurveSeries, 0, len(names))
	for _, n := range names {
		pts := bySeries[n]
		slices.SortFunc(pts, func(a, b CurvePoint) int { return compareFloat(a.X, b.X) })
		out = append(out, CurveSeries{Series: n, Points: pts})
	}
	return out, nil
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dropKey removes key=... from a canonical setting string.
func dropKey(setting, key string) string {
	var keep []string
	for _, f := range strings.Fields(setting) {
		if !strings.HasPrefix(f, key+"=") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

// Curve draws a sensitivity or ablation curve: x = a numeric label (CurveOptions.X), y = the
// metric's mean over seeds (average JCT by default), one line with markers per series (policy
// or variant), and the 95% CI where points have two or more seeds: a shaded band when at most
// two series have one, else error bars (offset slightly sideways per series). Bands and error
// bars are clipped to the axes; on a log y axis their lower ends stop at the axis bottom.
func Curve(runs []*results.Run, opt CurveOptions) (*Figure, error) {
	data, err := CurveData(runs, opt)
	if err != nil {
		return nil, err
	}
	m := opt.Metric
	if m.Value == nil {
		m, _ = MetricByName("avg-jct")
	}
	key := strings.TrimPrefix(opt.X, "labels.")
	q, unit := metricQuantity(m)
	title := opt.Title
	if title == "" {
		title = capitalize(fmt.Sprintf("%s vs %s", q, strings.SplitN(xLabelFor(key), " (", 2)[0]))
		if len(runs) > 0 {
			title += " — " + (&Cell{Experiment: runs[0].Experiment(), Trace: runs[0].Trace()}).Name()
		}
	}
	if opt.OffScale > 0 {
		var kept []CurveSeries
		var off []string
		for _, s := range data {
			if slices.ContainsFunc(s.Points, func(pt CurvePoint) bool { return pt.Mean > opt.OffScale }) {
				off = append(off, s.Series)
			} else {
				kept = append(kept, s)
			}
		}
		if len(off) > 0 && len(kept) > 0 {
			data = kept
			title += offScaleNote(off, opt.OffScale)
		}
	}
	var means, all []float64
	anyCI := false
	for _, s := range data {
		for _, pt := range s.Points {
			means = append(means, pt.Mean)
			all = append(all, pt.Mean)
			if pt.HasCI() {
				all = append(all, pt.Hi())
				anyCI = true
			}
		}
	}
	if opt.Band != nil {
		all = append(all, opt.Band[1])
	}
	isTime, yScale := isTimeMetric(m), opt.YScale
	if opt.Normalize != "" {
		isTime, yScale, unit = false, ScaleLinear, ""
		q += " ÷ " + opt.Normalize + "'s"
		all = append(all, 1)
	}
	ax, err := newValueAxis(means, isTime, yScale, false)
	if err != nil {
		return nil, fmt.Errorf("analysis: curve: %s: %w", q, err)
	}
	yLabel := ax.label(q, unit)
	if anyCI {
		yLabel += ", mean ± 95% CI"
	}
	if opt.Normalize != "" && anyCI {
		yLabel = q + " (paired by seed), mean ± 95% CI"
	}
	xl := xLabelFor(key)
	if opt.XLabel != "" {
		xl = opt.XLabel
	}
	p := newPlot(title, xl, yLabel)
	p.Y.Tick.Marker = ax.ticker()
	leg := newLegend()
	if opt.Band != nil {
		b := &yBand{lo: ax.pos(opt.Band[0]), hi: ax.pos(opt.Band[1]), color: claimBand}
		p.Add(b)
		if opt.BandLabel != "" {
			leg.Add(opt.BandLabel, b)
		}
	}
	if opt.Normalize != "" {
		p.Add(&hLine{y: 1})
	}
	if opt.MarkX != nil {
		p.Add(&vMark{x: *opt.MarkX, label: opt.MarkXLabel, log: opt.LogX})
	}
	var names []string
	for _, s := range data {
		names = append(names, s.Series)
	}
	sty := styles(names)
	xs := map[float64]bool{}
	withCIs := 0
	for _, s := range data {
		if slices.ContainsFunc(s.Points, func(pt CurvePoint) bool { return pt.HasCI() }) {
			withCIs++
		}
	}
	bandsOK, ciIndex := withCIs <= 2, 0
	// xpos is the drawn x coordinate: log10(x) on a log axis (see log10Ticks).
	xpos := func(x float64) float64 {
		if opt.LogX {
			return math.Log10(x)
		}
		return x
	}
	for _, s := range data {
		st := sty[s.Series]
		var line plotter.XYs
		withCI := 0
		for _, pt := range s.Points {
			if opt.LogX && pt.X <= 0 {
				return nil, fmt.Errorf("analysis: curve: log x axis needs %s > 0, got %v", key, pt.X)
			}
			line = append(line, plotter.XY{X: xpos(pt.X), Y: ax.pos(pt.Mean)})
			xs[pt.X] = true
			if pt.HasCI() {
				withCI++
			}
		}
		var ci []ciPoint
		for _, pt := range s.Points {
			if pt.HasCI() {
				ci = append(ci, ciPoint{x: xpos(pt.X), lo: ax.pos(pt.Lo()), hi: ax.pos(pt.Hi())})
			}
		}
		switch {
		case withCI >= 2 && withCI == len(s.Points) && bandsOK:
			p.Add(&ciBand{pts: ci, color: st.Color})
		case withCI > 0:
			// Error bars: where some points lack a CI, or where more than two bands would
			// overlap into an unreadable mass. Each series' bars are offset a little sideways
			// so that they do not hide each other; the markers stay at their x.
			p.Add(&errBars{pts: ci, color: st.Color, dodge: vg.Points(3) * vg.Length(float64(ciIndex)-float64(withCIs-1)/2)})
			ciIndex++
		}
		l, err := lineFor(line, st)
		if err != nil {
			return nil, fmt.Errorf("analysis: curve: %w", err)
		}
		sc, err := plotter.NewScatter(line)
		if err != nil {
			return nil, fmt.Errorf("analysis: curve: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: st.Color, Radius: vg.Points(2.8), Shape: markerShape(st.Marker)}
		p.Add(l, sc)
		leg.Add(s.Series, l, sc)
	}
	ticks := make([]float64, 0, len(xs))
	for x := range xs {
		ticks = append(ticks, x)
	}
	slices.Sort(ticks)
	switch {
	case len(ticks) <= 12:
		var ct plot.ConstantTicks
		for _, x := range ticks {
			ct = append(ct, plot.Tick{Value: xpos(x), Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
		p.X.Tick.Marker = ct
	case opt.LogX:
		p.X.Tick.Marker = log10Ticks{}
	}
	if opt.LogX {
		p.X.Label.Text = withLogScale(p.X.Label.Text)
	}
	if len(ticks) > 1 {
		// A margin of 4% on either side keeps markers and error bars at the ends whole.
		lo, hi := xpos(ticks[0]), xpos(ticks[len(ticks)-1])
		p.X.Min, p.X.Max = lo-0.04*(hi-lo), hi+0.04*(hi-lo)
	}
	// The y range covers the means and the upper CI ends; lower CI ends below the axis
	// bottom (0, or the floor of a log axis) are clipped.
	top := math.Inf(-1)
	for _, v := range all {
		top = max(top, ax.pos(v))
	}
	if ax.log {
		p.Y.Min = ax.pos(ax.floor)
		p.Y.Max = top + 0.05*(top-p.Y.Min)
	} else {
		p.Y.Min = 0
		p.Y.Max = top * 1.05
		if !(top > 0) {
			p.Y.Max = 1
		}
	}
	return single(p, leg, figWidth, figHeight), nil
}

// ciPoint is the 95% CI of one curve point in drawn coordinates.
type ciPoint struct{ x, lo, hi float64 }

// ciBand shades the region between the lower and upper CI ends of a curve, clipped to the
// axes.
type ciBand struct {
	pts   []ciPoint
	color color.NRGBA
}

// Plot implements plot.Plotter.
func (b *ciBand) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ring := make([]vg.Point, 0, 2*len(b.pts))
	for _, pt := range b.pts {
		ring = append(ring, vg.Point{X: trX(pt.x), Y: trY(pt.hi)})
	}
	for i := len(b.pts) - 1; i >= 0; i-- {
		ring = append(ring, vg.Point{X: trX(b.pts[i].x), Y: trY(b.pts[i].lo)})
	}
	fill := b.color
	fill.A = 0x40
	c.FillPolygon(premultiplied(fill), c.ClipPolygonXY(ring))
}

// DataRange implements plot.DataRanger.
func (b *ciBand) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, pt := range b.pts {
		xmin, xmax = min(xmin, pt.x), max(xmax, pt.x)
		ymin, ymax = min(ymin, pt.lo), max(ymax, pt.hi)
	}
	return xmin, xmax, ymin, ymax
}

// premultiplied converts a non-premultiplied colour to color.RGBA.
func premultiplied(c color.NRGBA) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// errBars draws vertical 95% CI bars at curve points, offset sideways by dodge, clipped to
// the axes.
type errBars struct {
	pts   []ciPoint
	color color.NRGBA
	dodge vg.Length
}

// Plot implements plot.Plotter.
func (e *errBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: e.color, Width: vg.Points(1)}
	capW := vg.Points(2.5)
	for _, pt := range e.pts {
		x, lo, hi := trX(pt.x)+e.dodge, trY(pt.lo), trY(pt.hi)
		segs := [][]vg.Point{{{X: x, Y: lo}, {X: x, Y: hi}}, {{X: x - capW, Y: hi}, {X: x + capW, Y: hi}}}
		if pt.lo > p.Y.Min {
			// No cap where the interval runs past the bottom of the axis.
			segs = append(segs, []vg.Point{{X: x - capW, Y: lo}, {X: x + capW, Y: lo}})
		}
		c.StrokeLines(ls, c.ClipLinesXY(segs...)...)
	}
}

// DataRange implements plot.DataRanger.
func (e *errBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	return (&ciBand{pts: e.pts}).DataRange()
}
