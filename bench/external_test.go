package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/sim"
)

// TestExternalPolicyInASweep runs the Python sjf next to the built-in one in an experiment:
// same results, the command in run.json, the name argument as the label in the tables.
func TestExternalPolicyInASweep(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	script, err := filepath.Abs(filepath.Join("..", "clients", "python", "examples", "sjf.py"))
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	cmd := py + " " + script
	table := []Experiment{{
		Name: "X", Title: "external policy", Seeds: []uint64{1},
		Settings: []Setting{{Name: "testbed61", Trace: TraceSpec{Name: "testbed61", File: TraceTestbed61, Format: "muri"},
			Profile: ProfileSpec{File: ProfileGavelV100, ModelMap: ModelMapGavel}, Cluster: ClusterSpec{Nodes: 4, GPUsPerNode: 8, MemGiB: 48}}},
		Series:   []Series{{Name: "sjf", Policy: "sjf"}, {Name: "py-sjf", Policy: `external{"cmd":"` + cmd + `","name":"py-sjf"}`}},
		Analysis: Analysis{Baselines: []string{"sjf"}},
	}}
	plan, err := expand(table)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	outcomes, err := Sweep(context.Background(), NewInputs(env), plan, out, SweepOptions{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var sums []sim.Summary
	for _, o := range outcomes {
		if o.Err != nil {
			t.Fatalf("%s: %v", o.Run.ID, o.Err)
		}
		var s sim.Summary
		readJSON(t, filepath.Join(o.Run.Dir(out), sim.SummaryFile), &s)
		sums = append(sums, s)
		var rec RunRecord
		readJSON(t, filepath.Join(o.Run.Dir(out), RunFile), &rec)
		if want := map[string]string{"sjf": "", "py-sjf": cmd}[o.Run.Series]; rec.PolicyCommand != want {
			t.Errorf("%s: run.json policy_command %q, want %q", o.Run.ID, rec.PolicyCommand, want)
		}
	}
	if len(sums) != 2 || sums[0].AvgJCT != sums[1].AvgJCT || sums[0].Preemptions != sums[1].Preemptions {
		t.Errorf("the Python sjf differs from sjf: %+v", sums)
	}
	if _, err := aggregate(env, out, plan, table, AggregateOptions{Label: "t", Whole: true}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "X", tablesDir, "summary.md"))
	if err != nil || !strings.Contains(string(md), "| py-sjf |") {
		t.Errorf("summary table lacks the py-sjf row: %v\n%s", err, md)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
