package interleave_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestSameAsTraceTimes: under the shipped interleaving profile, the Muri simulator's schedulers
// decide as they do on the trace's own iteration times, with no profile (E7 relies on it).
func TestSameAsTraceTimes(t *testing.T) {
	prof, err := profile.LoadFile("../../results/profiles/muri-interleave.json")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := trace.ReadFile(filepath.Join("..", "..", "data", "traces", "muri-philly", "trace3.csv"), trace.FormatMuri, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"srtf", "tiresias", "antman", "themis", "muri-l"} {
		var logs [2]bytes.Buffer
		for k, p := range []*profile.Table{nil, prof} {
			policy, err := builtin.Registry().New(pol)
			if err != nil {
				t.Fatal(err)
			}
			cfg := sim.Config{Shape: cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: builtin.DefaultMaxShare(pol)},
				TraceName: "trace3", IterScale: 1.015, OverheadEveryEvent: true}
			obs, flush := sim.JSONLWriter(&logs[k])
			if _, err := sim.Run(context.Background(), cfg, jobs, policy, p, obs); err != nil {
				t.Fatal(err)
			}
			if err := flush(); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(logs[0].Bytes(), logs[1].Bytes()) {
			t.Errorf("%s: the decisions under the profile differ from those on the trace's iteration times", pol)
		}
	}
}
