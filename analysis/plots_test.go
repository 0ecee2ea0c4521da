package analysis

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/profile"
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
	return figs
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
