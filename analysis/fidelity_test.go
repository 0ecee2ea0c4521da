package analysis

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/results"
)

func fidelityFixture() FidelityRuns {
	run := func(dir string, jct ...float64) *results.Run {
		r := &results.Run{Dir: dir, Summary: results.Summary{Policy: "sjf-bsbf", Trace: "t.csv", Cluster: "1x1", GPUs: 1}}
		sum, mk := 0.0, 0.0
		for i, j := range jct {
			id := string(rune('1' + i))
			r.Jobs = append(r.Jobs, results.JobRow{JobID: id, Model: "m", NumGPU: 1, EndS: j, JCTS: j})
			sum, mk = sum+j, max(mk, j)
		}
		r.Summary.AvgJCTS, r.Summary.MakespanS, r.Summary.Jobs = sum/float64(len(jct)), mk, len(jct)
		return r
	}
	d := func(t float64, ev string, job int64, partners ...int64) results.Decision {
		x := results.Decision{TS: t, Event: ev, Job: job, Partners: partners}
		if ev == "start" {
			x.GPUs, x.SubBatch = []string{"0-0"}, 8
		}
		return x
	}
	return FidelityRuns{
		Real: run("real", 13, 20, 30),
		Sim:  run("sim", 10, 20, 25),
		// The same first two decisions; then job 2 finishes first in the replay, job 1 in the
		// simulation.
		RealLog: []results.Decision{d(0, "submit", 1), d(0, "start", 1), d(0, "start", 2, 1), d(12, "finish", 2), d(13, "finish", 1)},
		SimLog:  []results.Decision{d(0, "submit", 1), d(0, "start", 1), d(0, "start", 2, 1), d(10, "finish", 1), d(11, "finish", 2)},
		Segments: []results.SegmentRow{
			{JobID: "1", Attempt: 1, StartS: 0, EndS: 12, Partners: []string{"2"}, Steps: 100, StepS: 0.13, ProfileStepS: 0.1, Ratio: 1.3, XiProfile: 1.2, XiMeasured: 1.56},
			{JobID: "2", Attempt: 1, StartS: 0, EndS: 12, Partners: []string{"1"}, Steps: 50, StepS: 0.2, ProfileStepS: 0.2, Ratio: 1, XiProfile: 1.3, XiMeasured: 1.3},
		},
		Attempts: []results.AttemptRow{{JobID: "1", Attempt: 1, LaunchWaitS: 2}, {JobID: "2", Attempt: 1, LaunchWaitS: 4}},
	}
}

func TestFidelity(t *testing.T) {
	f, err := Fidelity(fidelityFixture())
	if err != nil {
		t.Fatal(err)
	}
	if e := f.Jobs[0].Err; math.Abs(e-0.3) > 1e-12 {
		t.Errorf("job 1 error %v, want 0.3", e)
	}
	if f.Jobs[0].StepRatio != 1.3 || f.Jobs[1].Launch != 4 {
		t.Errorf("job attribution: %+v", f.Jobs)
	}
	d := f.Divergence
	if d == nil || d.Index != 2 || f.Same != 2 || d.Real.Job != 2 || d.Sim.Job != 1 {
		t.Fatalf("divergence %+v (same %d)", d, f.Same)
	}
	why := strings.Join(d.Why, "\n")
	for _, want := range []string{"job 2: finish at 12.0 s in the replay, at 11.0 s in the simulation", "job 1 ran next to job 2", "1.30×", "ξ measured 1.56, profile 1.20", "took 3.0 s on average"} {
		if !strings.Contains(why, want) {
			t.Errorf("explanation lacks %q:\n%s", want, why)
		}
	}
	for _, ft := range []Format{Text, Markdown, CSV, LaTeX} {
		var buf bytes.Buffer
		if err := RenderAll(&buf, ft, f.Tables()...); err != nil || buf.Len() == 0 {
			t.Errorf("%s: %v", ft, err)
		}
	}
	var csv bytes.Buffer
	f.Tables()[0].Render(&csv, CSV)
	if !strings.Contains(csv.String(), "average JCT (s),18.3,21.0,14.5") {
		t.Errorf("summary CSV:\n%s", csv.String())
	}
	if _, err := f.Figures(); err != nil {
		t.Error(err)
	}
	// Equal logs: no divergence.
	in := fidelityFixture()
	in.RealLog = in.SimLog
	if g, _ := Fidelity(in); g.Divergence != nil || g.Same != 4 {
		t.Errorf("equal logs: divergence %+v, same %d", g.Divergence, g.Same)
	}
	// Different jobs: refused.
	in.Sim.Jobs = in.Sim.Jobs[:2]
	if _, err := Fidelity(in); err == nil {
		t.Error("runs of different traces compared")
	}
}
