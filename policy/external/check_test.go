package external_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/external"
	"github.com/sharebench/sharebench/sim"
)

// failsCleanly checks that a run failed with an error holding every want, and left no run
// directory and no temporary directory behind.
func failsCleanly(t *testing.T, out string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("run succeeded; want an error with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q", err, w)
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*"))
	hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*"))
	if len(left)+len(hidden) > 0 {
		t.Errorf("the failed run left %v %v", left, hidden)
	}
}

// TestInvalidPlans feeds the engine illegal plans; each ends the run with an error naming the
// instant, the job and the rule.
func TestInvalidPlans(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	exclusive := shape
	exclusive.MaxShare = 1
	for _, c := range []struct {
		name  string
		shape cluster.Shape
		plan  string
		want  []string
	}{
		{"double-booked GPU", shape, `{"start":[{"job":5,"gpus":[1,1]}]}`,
			[]string{"start of job 5", "GPU 0-1 (index 1) double-booked: listed twice"}},
		{"GPU held by another job, max_share 1", exclusive, `{"start":[{"job":1,"gpus":[0]},{"job":2,"gpus":[0]}]}`,
			[]string{"start of job 2", "GPU 0-0 (index 0) would hold 2 jobs, more than max_share 1 (it holds job 1)"}},
		{"three jobs on a GPU", shape, `{"start":[{"job":1,"gpus":[2]},{"job":2,"gpus":[2]},{"job":0,"gpus":[2]}]}`,
			[]string{"start of job 0", "GPU 0-2 (index 2) would hold 3 jobs, more than max_share 2 (it holds job 1 and 2)"}},
		{"memory exceeded", shape, `{"start":[{"job":0,"gpus":[3]},{"job":6,"gpus":[3]}]}`,
			[]string{"start of job 6", "GPU memory exceeded on GPU 0-3 (index 3): option 0 needs 10.00 GiB, 6.00 GiB free (it holds job 0)"}},
		{"unknown job", shape, `{"start":[{"job":99,"gpus":[0]}]}`,
			[]string{"start of job 99", "unknown job (not in the trace)"}},
		{"start before submit", shape, `{"start":[{"job":4,"gpus":[0,1]}]}`,
			[]string{"start of job 4", "start before submission: the job is submitted at t=100.000s"}},
		{"pair missing from the profile", shape, `{"start":[{"job":1,"gpus":[0]},{"job":3,"gpus":[0]}]}`,
			[]string{"start of job 3", "shares GPU 0-0 with job 1, a pair the profile lacks (lonely/32/32 next to small/32/32)"}},
		{"wrong GPU count", shape, `{"start":[{"job":5,"gpus":[0]}]}`,
			[]string{"start of job 5", "placed on 1 GPUs, the job needs 2"}},
		{"option out of range", shape, `{"start":[{"job":1,"gpus":[0],"opt":3}]}`,
			[]string{"start of job 1", "option 3 out of range (the job has 1 options, 0 to 0)"}},
		{"GPU out of range", shape, `{"start":[{"job":1,"gpus":[4]}]}`,
			[]string{"start of job 1", "GPU index 4 out of range (the cluster has GPUs 0 to 3)"}},
		{"started twice", shape, `{"start":[{"job":1,"gpus":[0]},{"job":1,"gpus":[1]}]}`,
			[]string{"start of job 1", "started twice in one plan"}},
		{"stop of a pending job", shape, `{"stop":[1]}`,
			[]string{"stop of job 1", "the job is not running (it is pending)"}},
		{"wrong partner", shape, `{"start":[{"job":1,"gpus":[0],"partners":[2]}]}`,
			[]string{"start of job 1", "partner 2 is on none of the job's GPUs"}},
		{"unknown field", shape, `{"start":[{"job":1,"gpu":[0]}]}`,
			[]string{"reply is not a plan", `unknown field "gpu"`}},
		{"engine's own event", shape, `{"notes":[{"job":1,"event":"start"}]}`,
			[]string{"job 1", `note event "start": the engine logs that itself`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := simulate(t, childSpec(t, "plan", c.plan, ""), fixtureJobs(), c.shape, fixtureProfile(t), nil)
			failsCleanly(t, out, err, append([]string{"external policy", "decision 1 at t=0.000s"}, c.want...)...)
		})
	}
}

// TestValidSharedPlanPasses checks that a legal plan with sharing and partners runs, and that
// its partners and reason reach the decision log.
func TestValidSharedPlanPasses(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	plan := `{"start":[{"job":0,"gpus":[0],"opt":0},{"job":1,"gpus":[0],"partners":[0],"reason":"share"},{"job":2,"gpus":[1]}]}`
	out, err := simulate(t, childSpec(t, "plan", plan, ""), fixtureJobs()[:3], shape, fixtureProfile(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(out, "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"t_s":0.000,"event":"start","job":1,"gpus":["0-0"],"sub_batch":32,"partners":[0],"reason":"share"}`
	if !strings.Contains(string(log), want+"\n") {
		t.Errorf("decision log lacks %s:\n%s", want, log)
	}
}

func TestHungChild(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	out, err := simulate(t, childSpec(t, "hang", "", `,"timeout_s":0.2`), fixtureJobs(), shape, fixtureProfile(t), nil)
	failsCleanly(t, out, err, "decision 1 at t=0.000s", "no reply within 200ms (timeout_s 0.2); the policy process was killed")
}

func TestCrashingChild(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	out, err := simulate(t, childSpec(t, "crash", "", ""), fixtureJobs(), shape, fixtureProfile(t), nil)
	failsCleanly(t, out, err, "decision 1 at t=0.000s", "the policy process exited with status 3 before replying; its standard error ended with: boom: the policy fell over")
}

func TestBadReplies(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	for _, c := range []struct {
		mode, spec string
		want       []string
	}{
		{"garbage", "", []string{"decision 1 at t=0.000s", `reply is not a plan`, `"this is not JSON\n"`}},
		{"version", "", []string{"start: the policy speaks protocol 99, sharebench speaks 1"}},
		{"", "external:no-such-command-for-sharebench --x", []string{`external policy "no-such-command-for-sharebench --x": start:`, "executable file not found"}},
		{"", `external{"cmd":"a 'b"}`, []string{`unterminated single quote`}},
		{"", `external{"cmd":"x","fds":[3,4]}`, []string{`give cmd or fds, not both`}},
	} {
		spec := c.spec
		if c.mode != "" {
			spec = childSpec(t, c.mode, "", "")
		}
		out, err := simulate(t, spec, fixtureJobs(), shape, fixtureProfile(t), nil)
		failsCleanly(t, out, err, c.want...)
	}
}

// TestEngineErrorInContext: a policy that never starts anything leaves the engine stuck; the
// engine's error comes back placed after the policy's last decision.
func TestEngineErrorInContext(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	out, err := simulate(t, childSpec(t, "idle", "", ""), fixtureJobs(), shape, fixtureProfile(t), nil)
	failsCleanly(t, out, err, "external policy", "after decision 2 at t=100.000s", "left 7 jobs waiting with nothing left to happen")
}

func TestMain_childNotLeft(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Fatal("child mode leaked into the tests")
	}
}

// TestEngineEvents: the events a note may not name are the engine's own, of sim's event kinds.
func TestEngineEvents(t *testing.T) {
	for _, k := range []sim.Kind{sim.Submit, sim.Start, sim.Preempt, sim.Finish, sim.Demote, sim.Promote} {
		own := k == sim.Demote || k == sim.Promote
		if external.IsEngineEvent(string(k)) == own {
			t.Errorf("event %q: engine's own %v", k, !own)
		}
	}
}
