package sim

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/trace"
)

// TestMuriDlasGPU replays Muri's traces under tiresias and compares every job with the Muri
// simulator's own dlas-gpu (testdata/muri/README.md): the scheduling alone, and with the
// lineage's two non-scheduling effects switched on.
func TestMuriDlasGPU(t *testing.T) {
	traces := []string{"trace1", "trace2", "trace3", "trace4"}
	if testing.Short() {
		traces = traces[2:3]
	}
	for _, name := range traces {
		for _, lineage := range []bool{false, true} {
			ref := "testdata/muri/" + name + "-dlas-gpu-plain.csv"
			cfg := Config{Shape: cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}, TraceName: name}
			if lineage {
				ref = "testdata/muri/" + name + "-dlas-gpu.csv"
				cfg.IterScale, cfg.OverheadEveryEvent = 1.015, true
			}
			// The fast executor, and Tiresias' rule itself, which walks every job at every event.
			registries := map[string]*policy.Registry{"fast": builtin.Registry(), "rule": builtin.Registry(builtin.Reference())}
			for exec, reg := range registries {
				t.Run(ref+"/"+exec, func(t *testing.T) {
					want := readMuri(t, ref)
					p, err := reg.New("tiresias")
					if err != nil {
						t.Fatal(err)
					}
					r, err := Run(context.Background(), cfg, readTrace(t, "traces/muri-philly/"+name+".csv"), p, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(r.Jobs) != len(want) {
						t.Fatalf("%d jobs, Muri has %d", len(r.Jobs), len(want))
					}
					bad := 0
					for _, j := range r.Jobs {
						w, ok := want[j.ID]
						if !ok || math.Abs(j.JCT.Seconds()-w.jct) > 1e-3 || j.Preempts != w.preempts {
							if bad++; bad <= 5 {
								t.Errorf("job %d: JCT %.6f s, %d preemptions; Muri %.6f s, %d", j.ID, j.JCT.Seconds(), j.Preempts, w.jct, w.preempts)
							}
						}
					}
					if bad > 0 {
						t.Errorf("%d of %d jobs differ from Muri", bad, len(want))
					}
				})
			}
		}
	}
}

type muriJob struct {
	jct      float64
	preempts int
}

func readMuri(t *testing.T, path string) map[trace.JobID]muriJob {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[trace.JobID]muriJob{}
	for _, r := range rows[1:] {
		id, err1 := strconv.ParseInt(r[0], 10, 64)
		jct, err2 := strconv.ParseFloat(r[1], 64)
		pre, err3 := strconv.Atoi(r[2])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: bad row %v", path, r)
		}
		out[trace.JobID(id)] = muriJob{jct, pre}
	}
	return out
}
