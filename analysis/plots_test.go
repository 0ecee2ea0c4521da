package analysis

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/results"
)

// testFigures builds one figure of every kind from the fixtures.
func testFigures(t *testing.T) map[string]*Figure {
	t.Helper()
	e1 := loadRuns(t, "E1")
	trace1 := loadRuns(t, filepath.Join("E1", "trace1"))
	trace2 := loadRuns(t, filepath.Join("E1", "trace2"))
	a := loadProfile(t, "profile-a.json")
	figs := map[string]*Figure{}
	add := func(name string, f *Figure, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		figs[name] = f
	}
	f, err := AvgJCTBars(e1, BarOptions{})
	add("avg-jct", f, err)
	f, err = JCTCDF(trace1, CDFOptions{LogX: true})
	add("jct-cdf-logx", f, err)
	f, err = JCTCDF(trace2, CDFOptions{})
	add("jct-cdf", f, err)
	f, err = QueueCDF(trace1, CDFOptions{LogX: true})
	add("queue-cdf-logx", f, err)
	f, err = UtilOverTime(trace1, UtilOptions{})
	add("util", f, err)
	f, err = Curve(loadRuns(t, "E4"), CurveOptions{X: "labels.gpu_mem_gib"})
	add("curve-ci", f, err)
	f, err = Curve(loadRuns(t, "E5"), CurveOptions{X: "load"})
	add("curve-variants", f, err)
	f, err = XiHeatMap(a, PairSlice{profile.Timeslice, 1})
	add("xi-timeslice-1gpu", f, err)
	f, err = SubBatchFigure(a, "vgg16")
	add("subbatch-vgg16", f, err)
	// A single-column figure: the legend moves below the panel.
	f, err = AvgJCTBars(e1, BarOptions{})
	if err == nil {
		f.Width, f.Height = 8.5*vg.Centimeter, 7*vg.Centimeter
		f.SetFontSize(vg.Points(7))
	}
	add("avg-jct-narrow", f, err)
	f, err = AvgJCTBars(decadeRuns(), BarOptions{})
	add("avg-jct-log", f, err)
	big := largeProfile()
	f, err = XiHeatMap(big, PairSlice{profile.Timeslice, 1})
	add("xi-blocks", f, err)
	f, err = XiModelHeatMap(big, PairSlice{profile.Timeslice, 1})
	add("xi-models", f, err)
	// Normalized to a baseline, with a series far off the scale left out.
	f, err = AvgJCTBars(append(decadeRuns(), figRun("short", PolicyFIFO, 1, 30000), figRun("short", PolicyFIFO, 2, 36000)),
		BarOptions{Normalize: PolicyTiresias, OffScale: 3})
	add("avg-jct-normalized", f, err)
	one := 1.0
	f, err = Curve(loadRuns(t, "E5"), CurveOptions{X: "load", Normalize: "share-theorem1", MarkX: &one, MarkXLabel: "measured",
		Band: &[2]float64{0.67, 0.73}, BandLabel: "claim"})
	add("curve-normalized", f, err)
	set, err := CheckClaims(forestRuns())
	if err != nil {
		t.Fatal(err)
	}
	f, err = ForestPlot(set)
	add("forest", f, err)
	return figs
}

// forestRuns are claims runs of two cells with five seeds each: one where sjf-bsbf beats
// both baselines, and its copy under a counterfactual profile.
func forestRuns() []*results.Run {
	var out []*results.Run
	for _, tr := range []string{"measured", "scaled"} {
		for seed := uint64(1); seed <= 5; seed++ {
			d := float64(seed)
			for _, r := range []*results.Run{figRun(tr, PolicyTiresias, seed, 100+d), figRun(tr, "tiresias-testbed", seed, 90+d),
				figRun(tr, PolicySJFFFS, seed, 95-d), figRun(tr, PolicySJFBSBF, seed, 70+2*d)} {
				if tr == "scaled" {
					r.Summary.Counterfactual = "ξ scaled ×0.5"
					r.Summary.AvgJCTS *= 1 + 0.1*float64(seed%2)
				}
				out = append(out, r)
			}
		}
	}
	return out
}

// figRun is a synthetic run of one policy and seed with the given average JCT.
func figRun(trace, policy string, seed uint64, avgJCT float64) *results.Run {
	return &results.Run{
		Dir: trace + "/" + policy + "/" + strconv.FormatUint(seed, 10),
		Summary: results.Summary{Policy: policy, PolicySpec: policy, Trace: "file.csv", Seed: seed, AvgJCTS: avgJCT, GPUs: 8,
			Labels: results.Labels{results.LabelExperiment: "E", results.LabelTrace: trace}},
	}
}

// decadeRuns are runs whose average JCTs span three decades (20 min to 40 days), two seeds
// each, with a CI that reaches below 0 for one of them.
func decadeRuns() []*results.Run {
	var out []*results.Run
	for i, tr := range []string{"short", "long"} {
		scale := math.Pow(1000, float64(i))
		out = append(out,
			figRun(tr, PolicyTiresias, 1, 3000*scale), figRun(tr, PolicyTiresias, 2, 3600*scale),
			figRun(tr, PolicySJFBSBF, 1, 1200*scale), figRun(tr, PolicySJFBSBF, 2, 100*scale))
	}
	return out
}

// largeProfile is a synthetic profile of 3 models × 7 configurations (21 > maxLabelledCells)
// with every pair but one; ξ grows with both batches.
func largeProfile() *profile.Table {
	t := &profile.Table{GPU: "Test GPU L", Source: "test"}
	var cfgs []profile.Config
	for _, m := range []string{"alpha", "beta", "gamma"} {
		mod := profile.Model{Name: m, DefaultBatch: 64}
		for k := range 7 {
			b := 8 << k
			mod.Configs = append(mod.Configs, profile.Solo{Batch: b, SubBatch: b, IterS: profile.GPUMap{1: 0.01 * float64(k+1)}})
			cfgs = append(cfgs, profile.Config{Model: m, Batch: b, SubBatch: b})
		}
		t.Models = append(t.Models, mod)
	}
	for i, a := range cfgs {
		for j, b := range cfgs {
			if i == 3 && j == 4 {
				continue
			}
			t.Pairs = append(t.Pairs, profile.Pair{A: a, B: b, GPUs: 1, Mode: profile.Timeslice, Xi: 1 + float64(i+j)/20})
		}
	}
	if err := t.Normalize(); err != nil {
		panic(err)
	}
	return t
}

func encode(t *testing.T, f *Figure, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f.Encode(&buf, format); err != nil {
		t.Fatalf("encode %s: %v", format, err)
	}
	return buf.Bytes()
}

func TestFigureGoldens(t *testing.T) {
	for name, f := range testFigures(t) {
		golden := filepath.Join("testdata", "golden", "fig-"+name+".svg")
		checkGolden(t, golden, encode(t, f, "svg"))
	}
}

func TestFiguresAreDeterministic(t *testing.T) {
	first, second := testFigures(t), testFigures(t)
	for name := range first {
		for _, format := range []string{"svg", "png", "pdf"} {
			a, b := encode(t, first[name], format), encode(t, second[name], format)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: two %s renderings differ", name, format)
			}
			if len(a) == 0 {
				t.Errorf("%s: empty %s", name, format)
			}
		}
	}
}

func TestPDFDatesAreFixed(t *testing.T) {
	t.Parallel()
	f, err := SubBatchFigure(loadProfile(t, "profile-a.json"), "bert")
	if err != nil {
		t.Fatal(err)
	}
	pdf := encode(t, f, "pdf")
	for _, key := range []string{"/CreationDate (" + pdfEpoch + ")", "/ModDate (" + pdfEpoch + ")"} {
		if !bytes.Contains(pdf, []byte(key)) {
			t.Errorf("pdf lacks %s", key)
		}
	}
}

func TestProfileFigures(t *testing.T) {
	t.Parallel()
	figs, err := ProfileFigures(loadProfile(t, "profile-a.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
	}
	want := "xi-timeslice-1gpu xi-timeslice-2gpu xi-mps-1gpu subbatch-bert subbatch-resnet50 subbatch-vgg16"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("figure names %q, want %q", got, want)
	}
}

func TestFigureErrors(t *testing.T) {
	t.Parallel()
	e1 := loadRuns(t, "E1")
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"cdf over several traces", func() error { _, err := JCTCDF(e1, CDFOptions{}); return err }, "the runs span 3 experiment/trace/setting cells"},
		{"util over several traces", func() error { _, err := UtilOverTime(e1, UtilOptions{}); return err }, "plot one at a time"},
		{"curve without x", func() error { _, err := Curve(e1, CurveOptions{}); return err }, "no x label"},
		{"curve with missing label", func() error { _, err := Curve(e1, CurveOptions{X: "load"}); return err }, `no label "load"`},
		{"curve over several traces", func() error { _, err := Curve(e1, CurveOptions{X: "gpu_mem_gib"}); return err }, "differ in more than gpu_mem_gib"},
		{"unknown model", func() error { _, err := SubBatchFigure(loadProfile(t, "profile-a.json"), "gpt9"); return err }, `model "gpt9" not in the profile`},
		{"unknown format", func() error { f, _ := AvgJCTBars(e1, BarOptions{}); return f.Encode(&bytes.Buffer{}, "gif") }, `unknown figure format "gif"`},
	}
	for _, tc := range tests {
		err := tc.err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// tickLabels returns the labels of every axis of every panel of f.
func tickLabels(f *Figure) []string {
	var out []string
	for _, row := range f.Plots {
		for _, p := range row {
			for _, a := range []*plot.Axis{&p.X, &p.Y} {
				for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
					if t.Label != "" {
						out = append(out, t.Label)
					}
				}
			}
		}
	}
	return out
}

func TestTickLabelsAreReadable(t *testing.T) {
	bad := regexp.MustCompile(`\d{6}|e[+-]\d`)
	for name, f := range testFigures(t) {
		for _, l := range tickLabels(f) {
			if bad.MatchString(l) {
				t.Errorf("%s: tick label %q", name, l)
			}
		}
	}
}

func TestAutoLogScale(t *testing.T) {
	t.Parallel()
	runs := decadeRuns()
	f, err := AvgJCTBars(runs, BarOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Plots[0][0]
	if _, ok := p.Y.Tick.Marker.(timeLogTicks); !ok || !strings.Contains(p.Y.Label.Text, "log scale") {
		t.Errorf("bars spanning three decades: y ticks %T, label %q; want a log time axis", p.Y.Tick.Marker, p.Y.Label.Text)
	}
	// The axis starts at the power of ten below the lowest bar (650 s); a CI reaching below 0
	// is clipped there rather than extending the axis.
	if p.Y.Min != 2 {
		t.Errorf("log axis bottom %v, want 2 (100 s)", p.Y.Min)
	}
	if got := strings.Join(tickLabels(f), " "); !strings.Contains(got, "1 h") || !strings.Contains(got, "10 days") {
		t.Errorf("tick labels %q lack durations", got)
	}
	f, err = AvgJCTBars(runs, BarOptions{YScale: ScaleLinear})
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Plots[0][0]; p.Y.Min != 0 || p.Y.Label.Text != "average JCT (days), mean ± 95% CI" {
		t.Errorf("forced linear: y from %v, label %q", p.Y.Min, p.Y.Label.Text)
	}
	// Within a decade the axis stays linear.
	f, err = AvgJCTBars(loadRuns(t, "E1"), BarOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Plots[0][0].Y.Tick.Marker.(niceTicks); !ok {
		t.Errorf("E1 bars within a decade: y ticks %T, want linear", f.Plots[0][0].Y.Tick.Marker)
	}
	// CDFs: log x by default when the values span decades.
	f, err = JCTCDF(loadRuns(t, filepath.Join("E1", "trace2")), CDFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cdfLog := strings.Contains(f.Plots[0][0].X.Label.Text, "log scale")
	f, err = JCTCDF(loadRuns(t, filepath.Join("E1", "trace2")), CDFOptions{XScale: ScaleLinear})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.Plots[0][0].X.Label.Text, "log scale") {
		t.Error("XScale linear gave a log axis")
	}
	var jcts []float64
	for _, r := range loadRuns(t, filepath.Join("E1", "trace2")) {
		for _, j := range r.Jobs {
			jcts = append(jcts, j.JCTS)
		}
	}
	if cdfLog != spansDecades(jcts) {
		t.Errorf("CDF auto scale: log = %v, but the JCTs span decades = %v", cdfLog, spansDecades(jcts))
	}
}

func TestSetFontSize(t *testing.T) {
	t.Parallel()
	f, err := AvgJCTBars(loadRuns(t, "E1"), BarOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Plots[0][0]
	tick, title := p.Y.Tick.Label.Font.Size, p.Title.TextStyle.Font.Size
	f.SetFontSize(2 * vg.Points(baseFontSize))
	f.SetFontSize(2 * vg.Points(baseFontSize)) // idempotent
	if p.Y.Tick.Label.Font.Size != 2*tick || p.Title.TextStyle.Font.Size != 2*title || f.Legend.style.TextStyle.Font.Size != 2*vg.Points(baseFontSize) {
		t.Errorf("fonts %v %v %v, want twice %v %v %v", p.Y.Tick.Label.Font.Size, p.Title.TextStyle.Font.Size,
			f.Legend.style.TextStyle.Font.Size, tick, title, baseFontSize)
	}
}

func TestLargeHeatMaps(t *testing.T) {
	t.Parallel()
	big := largeProfile()
	f, err := XiHeatMap(big, PairSlice{profile.Timeslice, 1})
	if err != nil {
		t.Fatal(err)
	}
	hc := findHeatCells(t, f)
	if hc.labels || len(hc.blocks) != 3 || f.cbar == nil {
		t.Errorf("21 configurations: labels %v, blocks %v, colour bar %v; want colour only, 3 model blocks, a colour bar", hc.labels, hc.blocks, f.cbar != nil)
	}
	if got := strings.Join(tickLabels(f), " "); got != "alpha beta gamma alpha beta gamma" {
		t.Errorf("axis labels %q, want one per model", got)
	}
	m, err := XiModelHeatMap(big, PairSlice{profile.Timeslice, 1})
	if err != nil {
		t.Fatal(err)
	}
	hc = findHeatCells(t, m)
	var picked []string
	for _, c := range hc.m.Configs {
		picked = append(picked, c.String())
	}
	// alpha/64/64 (index 3) lacks one pair: alpha's largest batch with every pair is chosen.
	if got := strings.Join(picked, " "); !hc.labels || got != "alpha/512/512 beta/512/512 gamma/512/512" {
		t.Errorf("model heat map: labels %v, configurations %q", hc.labels, got)
	}
	figs, err := ProfileFigures(big)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); !strings.HasPrefix(got, "xi-timeslice-1gpu xi-timeslice-1gpu-models subbatch-alpha") {
		t.Errorf("figure names %q", got)
	}
}

func findHeatCells(t *testing.T, f *Figure) *heatCells {
	t.Helper()
	if f.heat == nil {
		t.Fatal("no heat map cells in the figure")
	}
	return f.heat
}
