package analysis

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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

// timeUnit picks a unit for a time axis whose largest value is maxS seconds.
func timeUnit(maxS float64) (name string, div float64) {
	switch {
	case maxS >= 36000:
		return "h", 3600
	case maxS >= 1200:
		return "min", 60
	}
	return "s", 1
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
	// LogX draws the x axis on a log scale.
	LogX bool
	// Title overrides the default title.
	Title string
}

// JCTCDF draws the empirical CDF of job completion time, one step line per series, for the
// runs of one cell (experiment, trace, setting); the jobs of all seeds of a series are pooled.
func JCTCDF(runs []*results.Run, opt CDFOptions) (*Figure, error) {
	c, err := oneCell(runs, "JCT CDF")
	if err != nil {
		return nil, err
	}
	title := orDefault(opt.Title, "JCT distribution — "+c.Name())
	return cdfFigure(c, title, "job completion time", func(j *results.JobRow) float64 { return j.JCTS }, opt.LogX)
}

// QueueCDF draws the empirical CDF of queueing delay (total time pending), like JCTCDF. On a
// log axis, zero delays are drawn at a floor one decade below the smallest positive delay,
// and the axis label says so.
func QueueCDF(runs []*results.Run, opt CDFOptions) (*Figure, error) {
	c, err := oneCell(runs, "queueing-delay CDF")
	if err != nil {
		return nil, err
	}
	title := orDefault(opt.Title, "Queueing delay distribution — "+c.Name())
	return cdfFigure(c, title, "queueing delay", func(j *results.JobRow) float64 { return j.QueueS }, opt.LogX)
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

func cdfFigure(c *Cell, title, quantity string, value func(*results.JobRow) float64, logX bool) (*Figure, error) {
	samples := map[string][]float64{}
	maxV, minPos := 0.0, math.Inf(1)
	zeros := false
	for _, g := range c.Groups {
		for _, r := range g.Runs {
			for i := range r.Jobs {
				v := value(&r.Jobs[i])
				samples[g.Series] = append(samples[g.Series], v)
				maxV = max(maxV, v)
				if v > 0 {
					minPos = min(minPos, v)
				} else {
					zeros = true
				}
			}
		}
	}
	if maxV == 0 && len(samples) == 0 {
		return nil, fmt.Errorf("analysis: %s: the runs have no jobs", title)
	}
	unit, div := timeUnit(maxV)
	xLabel := fmt.Sprintf("%s (%s)", quantity, unit)
	floor := 0.0
	if logX {
		if math.IsInf(minPos, 1) {
			minPos = div
		}
		floor = math.Pow(10, math.Floor(math.Log10(minPos/div))-1)
		xLabel = fmt.Sprintf("%s (%s, log scale)", quantity, unit)
		if zeros {
			xLabel = fmt.Sprintf("%s (%s, log scale; 0 drawn at %s)", quantity, unit, strconv.FormatFloat(floor, 'g', -1, 64))
		}
	}
	p := newPlot(title, xLabel, "fraction of jobs ≤ x")
	p.Y.Min, p.Y.Max = 0, 1
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
		xpos := func(v float64) float64 {
			if logX {
				return math.Log10(max(v/div, floor))
			}
			return v / div
		}
		pts = append(pts, plotter.XY{X: xpos(ex[0]), Y: 0})
		for i := range ex {
			pts = append(pts, plotter.XY{X: xpos(ex[i]), Y: ef[i]})
		}
		l, err := lineFor(pts, sty[name])
		if err != nil {
			return nil, fmt.Errorf("analysis: %s: %w", title, err)
		}
		l.StepStyle = plotter.PostStep
		p.Add(l)
		leg.Add(fmt.Sprintf("%s (%d jobs)", name, len(xs)), l)
	}
	if logX {
		p.X.Tick.Marker = log10Ticks{}
	}
	return single(p, leg, figWidth, figHeight), nil
}

// BarOptions configures AvgJCTBars.
type BarOptions struct {
	// Metric is the bar height; the average JCT when zero.
	Metric Metric
	// Title overrides the default title.
	Title string
}

// AvgJCTBars draws grouped bars: one group per cell (experiment, trace, setting), one bar per
// series in the fixed policy order, height = mean over seeds of the metric (average JCT by
// default), with 95% CI error bars where a series has two or more seeds.
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
		if v := vary[c.Setting]; v != "" {
			n += "\n" + v
		}
		catNames = append(catNames, n)
		for _, g := range c.Groups {
			seriesSet[g.Series] = true
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
		title = capitalize(strings.SplitN(m.Label, " (", 2)[0] + " per policy")
		if len(experiments) == 1 {
			for e := range experiments {
				if e != "" {
					title += " — " + e
				}
			}
		}
	}
	p := newPlot(title, "trace", m.Label)
	leg := newLegend()
	k := len(names)
	width := 0.8 / float64(k)
	top := 0.0
	anyCI := false
	for j, name := range names {
		b := &bars{n: len(cells), style: sty[name], offset: -0.4 + (float64(j)+0.5)*width, width: width}
		for i, c := range cells {
			b.vals = append(b.vals, math.NaN())
			b.lo = append(b.lo, math.NaN())
			b.hi = append(b.hi, math.NaN())
			for _, g := range c.Groups {
				if g.Series != name {
					continue
				}
				e := g.Estimate(m.Value)
				b.vals[i] = e.Mean
				top = max(top, e.Mean)
				if e.HasCI() {
					b.lo[i], b.hi[i] = e.Lo(), e.Hi()
					top = max(top, e.Hi())
					anyCI = true
				}
			}
		}
		p.Add(b)
		leg.Add(name, b)
	}
	p.NominalX(catNames...)
	p.X.Label.Text = ""
	p.X.Min, p.X.Max = -0.5, float64(len(cells))-0.5
	p.Y.Min = 0
	p.Y.Max = top * 1.05
	if top == 0 {
		p.Y.Max = 1
	}
	if anyCI {
		p.Y.Label.Text = m.Label + ", mean ± 95% CI"
	}
	return single(p, leg, figWidth, figHeight), nil
}

// bars is one series of a grouped bar chart: bar i is centred at i+offset with the given
// width, both in data units, so that error bars line up with their bars.
type bars struct {
	n             int
	vals, lo, hi  []float64
	style         seriesStyle
	offset, width float64
}

// Plot implements plot.Plotter.
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	outline := draw.LineStyle{Color: color.Gray{Y: 0x30}, Width: vg.Points(0.5)}
	errStyle := draw.LineStyle{Color: color.Black, Width: vg.Points(0.9)}
	for i, v := range b.vals {
		if math.IsNaN(v) {
			continue
		}
		x0 := trX(float64(i) + b.offset - b.width/2)
		x1 := trX(float64(i) + b.offset + b.width/2)
		y0, y1 := trY(0), trY(v)
		rect := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.style.Color, c.ClipPolygonXY(rect))
		c.StrokeLines(outline, c.ClipLinesXY(append(rect, rect[0]))...)
		if !math.IsNaN(b.lo[i]) {
			xm := trX(float64(i) + b.offset)
			capW := (x1 - x0) / 4
			lo, hi := trY(b.lo[i]), trY(b.hi[i])
			c.StrokeLines(errStyle, c.ClipLinesXY(
				[]vg.Point{{X: xm, Y: lo}, {X: xm, Y: hi}},
				[]vg.Point{{X: xm - capW, Y: lo}, {X: xm + capW, Y: lo}},
				[]vg.Point{{X: xm - capW, Y: hi}, {X: xm + capW, Y: hi}})...)
		}
	}
}

// DataRange implements plot.DataRanger.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymax = 0
	for i, v := range b.vals {
		if !math.IsNaN(v) {
			ymax = max(ymax, v)
		}
		if !math.IsNaN(b.hi[i]) {
			ymax = max(ymax, b.hi[i])
		}
	}
	return -0.5, float64(b.n) - 0.5, 0, ymax
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.style.Color, pts)
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
		shared.Add(ls)
		leg.Add(label, lb)
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
	// Title overrides the default title.
	Title string
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
	vals := map[pt][]float64{}
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
			}
			if prev, dup := seeds[k][r.Summary.Seed]; dup {
				return nil, fmt.Errorf("analysis: curve: %s and %s: series %s at %s=%v with the same seed %d; the runs differ in more than %s",
					prev, r.Dir, g.Series, key, x, r.Summary.Seed, key)
			}
			seeds[k][r.Summary.Seed] = r.Dir
			vals[k] = append(vals[k], m.Value(&r.Summary))
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
	for k, v := range vals {
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
// or variant), and a shaded 95% CI band where points have two or more seeds.
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
	title := opt.Title
	if title == "" {
		title = capitalize(fmt.Sprintf("%s vs %s", strings.SplitN(m.Label, " (", 2)[0], strings.SplitN(xLabelFor(key), " (", 2)[0]))
		if len(runs) > 0 {
			title += " — " + (&Cell{Experiment: runs[0].Experiment(), Trace: runs[0].Trace()}).Name()
		}
	}
	p := newPlot(title, xLabelFor(key), m.Label)
	leg := newLegend()
	var names []string
	for _, s := range data {
		names = append(names, s.Series)
	}
	sty := styles(names)
	anyCI := false
	xs := map[float64]bool{}
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
		var upper, lower plotter.XYs
		for _, pt := range s.Points {
			if opt.LogX && pt.X <= 0 {
				return nil, fmt.Errorf("analysis: curve: log x axis needs %s > 0, got %v", key, pt.X)
			}
			x := xpos(pt.X)
			line = append(line, plotter.XY{X: x, Y: pt.Mean})
			xs[pt.X] = true
			if pt.HasCI() {
				upper = append(upper, plotter.XY{X: x, Y: pt.Hi()})
				lower = append(lower, plotter.XY{X: x, Y: pt.Lo()})
			}
		}
		if len(upper) >= 2 && len(upper) == len(s.Points) {
			ring := append(plotter.XYs{}, upper...)
			for i := len(lower) - 1; i >= 0; i-- {
				ring = append(ring, lower[i])
			}
			band, err := plotter.NewPolygon(ring)
			if err != nil {
				return nil, fmt.Errorf("analysis: curve: %w", err)
			}
			fill := st.Color
			fill.A = 0x40
			band.Color = premultiplied(fill)
			band.LineStyle.Width = 0
			p.Add(band)
			anyCI = true
		} else if len(upper) > 0 {
			// Some points lack a CI: draw error bars where there is one.
			eb := &errBars{style: st, logX: opt.LogX}
			for _, pt := range s.Points {
				if pt.HasCI() {
					eb.pts = append(eb.pts, pt)
				}
			}
			p.Add(eb)
			anyCI = true
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
	if anyCI {
		p.Y.Label.Text = m.Label + ", mean ± 95% CI"
	}
	p.Y.Min = 0
	return single(p, leg, figWidth, figHeight), nil
}

// premultiplied converts a non-premultiplied colour to color.RGBA.
func premultiplied(c color.NRGBA) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

// markerShape returns glyph k: circle, square, triangle, cross, ring, box, pyramid, plus.
func markerShape(k int) draw.GlyphDrawer {
	switch k % 8 {
	case 0:
		return draw.CircleGlyph{}
	case 1:
		return draw.SquareGlyph{}
	case 2:
		return draw.TriangleGlyph{}
	case 3:
		return draw.CrossGlyph{}
	case 4:
		return draw.RingGlyph{}
	case 5:
		return draw.BoxGlyph{}
	case 6:
		return draw.PyramidGlyph{}
	default:
		return draw.PlusGlyph{}
	}
}

// errBars draws vertical 95% CI bars at curve points.
type errBars struct {
	pts   []CurvePoint
	style seriesStyle
	logX  bool // x is drawn as log10(x)
}

func (e *errBars) x(pt CurvePoint) float64 {
	if e.logX {
		return math.Log10(pt.X)
	}
	return pt.X
}

// Plot implements plot.Plotter.
func (e *errBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: e.style.Color, Width: vg.Points(1)}
	capW := vg.Points(3)
	for _, pt := range e.pts {
		x, lo, hi := trX(e.x(pt)), trY(pt.Lo()), trY(pt.Hi())
		c.StrokeLines(ls, c.ClipLinesXY(
			[]vg.Point{{X: x, Y: lo}, {X: x, Y: hi}},
			[]vg.Point{{X: x - capW, Y: lo}, {X: x + capW, Y: lo}},
			[]vg.Point{{X: x - capW, Y: hi}, {X: x + capW, Y: hi}})...)
	}
}

// DataRange implements plot.DataRanger.
func (e *errBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, pt := range e.pts {
		xmin, xmax = min(xmin, e.x(pt)), max(xmax, e.x(pt))
		ymin, ymax = min(ymin, pt.Lo()), max(ymax, pt.Hi())
	}
	return xmin, xmax, ymin, ymax
}
