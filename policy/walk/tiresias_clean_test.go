package walk_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/walk"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestReplacedDeadlinesNeverFire: tiresias-entry-order keeps only each job's latest deadline
// (deadlines.go); kept and checked when they come due, the deadlines it replaced would never
// have fired, and checking them changes no decision or event, with the lineage's per-event
// overhead too (where every wake-up costs running jobs progress, so a replaced deadline still
// wakes the engine). The policies run with promotions, which set the most deadlines.
func TestReplacedDeadlinesNeverFire(t *testing.T) {
	root := filepath.Join("..", "..")
	jobs, err := trace.ReadFile(filepath.Join(root, "data", "traces", "muri-philly", "trace3.csv"), trace.FormatMuri, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.LoadFile(filepath.Join(root, "results", "profiles", "gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	mm, err := profile.LoadModelMapFile(filepath.Join(root, "bench", "modelmaps", "gavel.csv"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(policyName string, muri bool) []byte {
		var buf bytes.Buffer
		obs, flush := sim.JSONLWriter(&buf)
		spec := bench.SimSpec{Jobs: jobs, TraceName: "trace3", Policy: policyName, Profile: prof, ModelMap: mm, Observer: obs,
			Shape: cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}}
		if muri {
			spec.IterScale, spec.OverheadEveryEvent = 1.015, true
		}
		if _, err := bench.Simulate(context.Background(), spec, "", false); err != nil {
			t.Fatal(err)
		}
		if err := flush(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, p := range []string{"tiresias-testbed", `tiresias-entry-order{"limits_s":[3250,7200],"starve_factor":1.5}`} {
		for _, muri := range []bool{false, true} {
			want := run(p, muri)
			restore := walk.CheckReplacedDeadlines()
			got := run(p, muri)
			restore()
			if !bytes.Equal(got, want) {
				t.Errorf("%s (per-event overhead %v): the decision log changes when replaced deadlines are checked", p, muri)
			}
		}
	}
}
