package replay

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sharebench/sharebench/trace"
)

var updateTrace = flag.Bool("update-trace", false, "rewrite bench/traces/replay12.csv from bench/traces/testbed61.csv")

// TestReplayTraceRebuild derives the replay trace from the shipped testbed trace and requires
// bench/traces/replay12.csv to be byte-identical (-update-trace rewrites it).
func TestReplayTraceRebuild(t *testing.T) {
	src := filepath.Join("..", "bench", "traces", "testbed61.csv")
	dst := filepath.Join("..", "bench", "traces", "replay12.csv")
	testbed, err := trace.ReadFile(src, trace.FormatMuri, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Replay12().Derive(testbed)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := trace.Write(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	if *updateTrace {
		if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s differs from the rule's output; run go test ./replay -run TestReplayTraceRebuild -update-trace\n%s", dst, buf.String())
	}
	models := map[string]int{}
	var solo float64
	for _, j := range jobs {
		models[j.Model]++
		if j.GPUs != 1 {
			t.Errorf("job %d asks for %d GPUs", j.ID, j.GPUs)
		}
		solo += float64(j.Iters) * j.IterTime.Seconds()
	}
	if solo < 18*60 || solo > 20*60 {
		t.Errorf("%.0f s of solo work; bench/traces/README.md says about 19 minutes", solo)
	}
	if len(jobs) != 12 || len(models) != 8 {
		t.Errorf("%d jobs over %d models, want 12 over the authors' 8", len(jobs), len(models))
	}
	t.Logf("replay12: %d jobs, %.0f s of solo work at the trace's iteration times, last arrival %v", len(jobs), solo, jobs[len(jobs)-1].Submit)
}
