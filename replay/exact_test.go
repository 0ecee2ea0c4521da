package replay

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// exactCase is one configuration under which a replay against the virtual world must equal
// the simulation.
type exactCase struct {
	name     string
	shape    string
	maxGPUs  int
	jobs     int
	interval time.Duration
	restart  sim.RestartCost
	noProf   bool
}

var exactCases = []exactCase{
	{name: "events", shape: "2x4", maxGPUs: 8, jobs: 40, restart: sim.RestartCost{Source: sim.RestartAuto}},
	{name: "rounds", shape: "2x4", maxGPUs: 8, jobs: 40, interval: 60 * time.Second, restart: sim.RestartCost{Source: sim.RestartFixed, Fixed: 1500 * time.Millisecond}},
	{name: "one-gpu", shape: "1x1", maxGPUs: 1, jobs: 12},
	{name: "no-profile", shape: "1x4", maxGPUs: 4, jobs: 20, noProf: true, restart: sim.RestartCost{Source: sim.RestartLineage}},
}

// exactPolicies are every built-in policy and the authors' variants but muri-s and muri-l, which
// need the stage times of Muri's dialect that the fixture trace does not give.
func exactPolicies() []string {
	var out []string
	for _, i := range builtin.Registry().Infos() {
		if i.Name != policy.KeyExternal && i.Name != schedulers.KeyMuriS && i.Name != schedulers.KeyMuriL {
			out = append(out, i.Name)
		}
	}
	for _, a := range builtin.Registry().Aliases() {
		out = append(out, a[0])
	}
	return append(out, `sjf{"victims":"tentative"}`)
}

// TestVirtualReplayEqualsSimulation drives the live engine with a world that progresses exactly
// as the profile says and requires the decision log, jobs.csv and every summary figure of
// sim.Run, byte for byte: the proof that the replay's code path and the simulator's agree when
// the world behaves as the profile says.
func TestVirtualReplayEqualsSimulation(t *testing.T) {
	prof := fixtureProfile(t)
	decisions, preempts, shared := 0, 0, 0
	for _, c := range exactCases {
		shape, err := cluster.ParseShape(c.shape)
		if err != nil {
			t.Fatal(err)
		}
		shape.GPUMemBytes, shape.MaxShare = prof.GPUMemBytes, 2
		jobs := fixtureTrace(t, c.jobs, c.maxGPUs, uint64(c.jobs))
		p := prof
		if c.noProf {
			p = nil
		}
		for _, spec := range exactPolicies() {
			t.Run(c.name+"/"+spec, func(t *testing.T) {
				s := Spec{Jobs: jobs, TraceName: "fixture", Shape: shape, Policy: spec, Profile: p, ProfileName: "fixture.json",
					Interval: c.interval, Restart: c.restart}
				simLog, simJobs, simSum := simulate(t, s)
				var buf bytes.Buffer
				obs, flush := sim.JSONLWriter(&buf)
				res, err := Run(context.Background(), s, NewVirtual(p, nil, c.restart), obs)
				if err != nil {
					t.Fatal(err)
				}
				if err := flush(); err != nil {
					t.Fatal(err)
				}
				if d := firstDiff(buf.Bytes(), simLog); d != "" {
					t.Fatalf("decision logs differ: %s", d)
				}
				var jb, sb bytes.Buffer
				if err := sim.WriteJobs(&jb, res.Jobs); err != nil {
					t.Fatal(err)
				}
				if err := sim.WriteSummary(&sb, &res.Summary); err != nil {
					t.Fatal(err)
				}
				if d := firstDiff(jb.Bytes(), simJobs); d != "" {
					t.Fatalf("jobs.csv differs: %s", d)
				}
				if d := firstDiff(sb.Bytes(), simSum); d != "" {
					t.Fatalf("summary.json differs: %s", d)
				}
				decisions += bytes.Count(simLog, []byte("\n"))
				preempts += res.Summary.Preemptions
				shared += res.Summary.SharedJobs
			})
		}
	}
	t.Logf("%d decision-log lines compared; %d preemptions, %d jobs that shared", decisions, preempts, shared)
	if preempts == 0 || shared == 0 {
		t.Errorf("the cases exercise no preemption (%d) or no sharing (%d)", preempts, shared)
	}
}

// simulate runs the spec through sim.Run and returns its decision log, jobs.csv and
// summary.json, the summary labelled as Run labels the replay's.
func simulate(t *testing.T, s Spec) (log, jobs, summary []byte) {
	t.Helper()
	p, err := builtin.Registry().New(s.Policy)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	obs, flush := sim.JSONLWriter(&buf)
	cfg := sim.Config{Shape: s.Shape, Interval: s.Interval, Restart: s.Restart, TraceName: s.TraceName}
	res, err := sim.Run(context.Background(), cfg, s.Jobs, p, s.Profile, obs)
	if err != nil {
		t.Fatal(err)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	sum := &res.Summary
	sum.Policy = s.Policy
	if key, args, err := builtin.Registry().Resolve(s.Policy); err == nil {
		sum.PolicySpec = key + string(args)
	}
	if s.Profile != nil {
		sum.Profile, sum.ProfileSource = filepath.Base(s.ProfileName), s.Profile.Source
	}
	var jb, sb bytes.Buffer
	if err := sim.WriteJobs(&jb, res.Jobs); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteSummary(&sb, sum); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), jb.Bytes(), sb.Bytes()
}

// firstDiff describes the first differing line of a and b, or "" when they are equal.
func firstDiff(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d:\n replay: %s\n    sim: %s", i+1, x, y)
		}
	}
	return "trailing bytes"
}

// TestVirtualReplayScaledSubmits checks that a time scale moves the arrivals, and only them.
func TestVirtualReplayScaledSubmits(t *testing.T) {
	prof := fixtureProfile(t)
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 1, GPUMemBytes: prof.GPUMemBytes, MaxShare: 2}
	jobs := fixtureTrace(t, 6, 1, 3)
	s := Spec{Jobs: jobs, TraceName: "fixture", Shape: shape, Policy: "sjf-bsbf", Profile: prof, TimeScale: 0.25}
	res, err := Run(context.Background(), s, NewVirtual(prof, nil, sim.RestartCost{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[trace.JobID]trace.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for _, r := range res.Jobs {
		want := time.Duration(float64(byID[r.ID].Submit) * 0.25)
		if d := r.Submit - want; d < -1 || d > 1 {
			t.Errorf("job %d: submit %v, want %v", r.ID, r.Submit, want)
		}
	}
	if _, err := (&Spec{TimeScale: -1}).ScaledJobs(); err == nil {
		t.Error("negative time scale accepted")
	}
	_ = profile.Timeslice
}
