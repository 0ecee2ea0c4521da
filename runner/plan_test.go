package runner

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestProjectWindow pins the window rule as the projection applies it: enough kept steps for
// min_steps or min_seconds (at least floor_steps), plus trimmed steps and the step lost to
// aligning a pair, capped at max_seconds once every member keeps a step, plus the slowest
// step in flight at stop.
func TestProjectWindow(t *testing.T) {
	t.Parallel()
	w := Window{MinSteps: 40, MinSeconds: 1, FloorSteps: 3, Trim: 1, MaxSeconds: 4}
	for _, tc := range []struct {
		name    string
		w       Window
		per     []float64
		seconds float64
		steps   []int
		short   bool
	}{
		// 100 ms: 10 kept steps reach 1 s, + 2 trimmed.
		{"solo by seconds", w, []float64{100}, 12*0.1 + 0.1, []int{12}, false},
		// 10 ms: min_steps 40 comes first, + 2 trimmed.
		{"solo by steps", w, []float64{10}, 42*0.01 + 0.01, []int{42}, false},
		// 500 ms: floor 3 (> 2 by seconds), + 2 trimmed, + 1 to align the pair; the slower
		// member decides, the faster keeps stepping.
		{"pair", w, []float64{500, 200}, 6*0.5 + 0.5, []int{6, 8}, false},
		// 1 s: 6 steps need 6 s > 4 s: cut at max_seconds.
		{"pair capped", w, []float64{1000, 1000}, 4 + 1, []int{4, 4}, true},
		// 2 s: 4 s hold 2 steps, but a kept step needs 1 + 2 trimmed + 1 aligned: 8 s.
		{"pair slower than the cap", w, []float64{2000, 100}, 8 + 2, []int{4, 80}, true},
		{"no min_seconds", Window{MinSteps: 5, FloorSteps: 2, Trim: 0, MaxSeconds: 10}, []float64{100}, 0.2 + 0.1, []int{2}, false},
	} {
		s, steps, short := projectWindow(tc.w, tc.per)
		if math.Abs(s-tc.seconds) > 1e-9 || !cmp.Equal(steps, tc.steps) || short != tc.short {
			t.Errorf("%s: %.3f s, steps %v, short %v; want %.3f s, %v, %v", tc.name, s, steps, short, tc.seconds, tc.steps, tc.short)
		}
	}
}

// TestProject: a warm campaign's projection has a worker group per level (each configuration,
// and a second process for its pair with itself), each cell's runs, and the shot's total; a
// fresh one pays a start and a warm-up per process and run; done cells are left out.
func TestProject(t *testing.T) {
	t.Parallel()
	y := `
name: p
workers: warm
order: levels
sub_batch_levels: 2
pair_grid: matched
repeats: 1
reuse_solo: true
models: [{name: a, batches: [8], min_sub_batch: 4}, {name: b, batches: [8], min_sub_batch: 4}]
warmup: {steps: 2, seconds: 0}
window: {min_steps: 10, min_seconds: 100, floor_steps: 5, trim: 0, max_seconds: 100}
`
	steps := func(m Member) (float64, string, bool) {
		return map[string]float64{"a": 100, "b": 200}[m.Model], "test", m.Model != "c"
	}
	in := ProjectionInputs{StepMs: steps, Xi: 2, WorkerLoad: 10 * time.Second, RunOverhead: time.Second, Fixed: 30 * time.Second,
		Reserve: 20 * time.Second, Budget: 400 * time.Second}
	p, err := Project(mustParse(t, y), in)
	if err != nil {
		t.Fatal(err)
	}
	// Per level: a, b, a#1, b#1; warm-up 2 steps each: 2 × (0.1 + 0.2 + 0.1 + 0.2) s.
	want := []GroupProjection{{"timeslice level 0", 4, 10, 1.2}, {"timeslice level 1", 4, 10, 1.2}}
	if d := cmp.Diff(want, p.Groups, cmpFloat); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	if len(p.Cells) != 10 || p.Short != 0 || !p.Fits || p.Sources[0] != "test" {
		t.Fatalf("projection: %+v", p)
	}
	// Solo a: 10 steps of 0.1 s + one in flight; pair a+b: 10 + 1 aligned steps of 0.4 s
	// (ξ = 2) for b, + 0.4 s in flight.
	for _, c := range p.Cells {
		var wantW float64
		switch c.Label {
		case "a/8/8", "a/8/4":
			wantW = 1.1
		case "a/8/8+b/8/8", "a/8/4+b/8/4", "b/8/8+b/8/8":
			wantW = 11*0.4 + 0.4
		default:
			continue
		}
		if math.Abs(c.WindowS-wantW) > 1e-9 || c.SetupS != 1 || c.Runs != 1 {
			t.Errorf("%s: window %.3f s, setup %.3f s, %d runs; want %.3f s, 1 s, 1", c.Label, c.WindowS, c.SetupS, c.Runs, wantW)
		}
	}
	sum := 0.0
	for _, c := range p.Cells {
		sum += c.WindowS + c.SetupS
	}
	if math.Abs(p.CampaignS-(sum+22.4)) > 1e-9 || math.Abs(p.ShotS-(p.CampaignS+50)) > 1e-9 {
		t.Errorf("campaign %.3f s (cells %.3f s + workers 22.4 s), shot %.3f s", p.CampaignS, sum, p.ShotS)
	}

	in.Budget = time.Duration(p.ShotS*float64(time.Second)) - time.Second
	if p2, _ := Project(mustParse(t, y), in); p2.Fits {
		t.Error("a shot over its budget fits")
	}
	in.Budget = 0
	in.Done = func(c Cell) bool { return c.Level == 0 }
	p3, err := Project(mustParse(t, y), in)
	if err != nil || len(p3.Cells) != 5 || len(p3.Groups) != 1 || p3.Groups[0].Group != "timeslice level 1" {
		t.Errorf("with level 0 done: %v, %d cells, groups %+v", err, len(p3.Cells), p3.Groups)
	}

	fresh, err := Project(mustParse(t, strings.Replace(y, "workers: warm", "workers: fresh", 1)), ProjectionInputs{StepMs: steps, Xi: 2, WorkerLoad: 10 * time.Second})
	if err != nil || len(fresh.Groups) != 0 || fresh.WorkersS != 0 {
		t.Fatalf("fresh: %v %+v", err, fresh.Groups)
	}
	for _, c := range fresh.Cells {
		if c.Label == "a/8/8+b/8/8" && math.Abs(c.SetupS-(20+0.2+0.4)) > 1e-9 {
			t.Errorf("fresh pair setup %.3f s, want two starts and warm-ups (20.6 s)", c.SetupS)
		}
	}
	if _, err := Project(mustParse(t, "name: x\nmodels: [{name: c, batches: [8]}]\n"), ProjectionInputs{StepMs: steps, Xi: 2}); err == nil || !strings.Contains(err.Error(), "no step time for c/8/8") {
		t.Errorf("unknown step time: %v", err)
	}
}

var cmpFloat = cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-9 })

// TestPublishedStepTimes: the published step times are the medians of the GPU part of an
// iteration in Muri's testbed trace, per model at its batch, scaled by batch and the same for
// every sub-batch.
func TestPublishedStepTimes(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", MuriTestbedTrace)
	got, err := MuriGPUTimes(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{ // batch, ms
		"resnet18": {128, 117}, "shufflenet_v2_x1_0": {128, 57}, "vgg16": {16, 75}, "vgg19": {16, 88},
		"bert": {4, 167}, "gpt2": {4, 419}, "dqn": {128, 8}, "a2c": {64, 14},
	}
	for model, w := range want {
		if m := got[model]; m.Batch != w[0] || m.IterTime != time.Duration(w[1])*time.Millisecond {
			t.Errorf("%s: batch %d, %v; want %d, %d ms", model, m.Batch, m.IterTime, w[0], w[1])
		}
	}
	steps, err := StepTimes("published", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    Member
		want float64
	}{{Member{Model: "vgg16", Batch: 16, SubBatch: 8}, 75}, {Member{Model: "vgg16", Batch: 32, SubBatch: 32}, 150}} {
		if ms, src, ok := steps(tc.m); !ok || ms != tc.want || !strings.Contains(src, "resource_time_1") {
			t.Errorf("%s: %v ms (%q, %v), want %v", tc.m, ms, src, ok, tc.want)
		}
	}
	if _, _, ok := steps(Member{Model: "resnet50", Batch: 64}); ok {
		t.Error("a model outside the trace has a published step time")
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("model_name,batch_size,resource_time_1\nvgg16,16,-3\n"), 0o644)
	if _, err := MuriGPUTimes(bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a negative time: %v", err)
	}
	if _, err := StepTimes("guessed", path); err == nil {
		t.Error("an unknown source is accepted")
	}
}
