package interleave

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/profile"
)

var muriTraces = []string{"trace1.csv", "trace2.csv", "trace3.csv", "trace4.csv"}

// TestShippedProfile requires results/profiles/muri-interleave.json to be what FromTraces makes of
// Muri's four traces, byte for byte.
func TestShippedProfile(t *testing.T) {
	var files []string
	for _, f := range muriTraces {
		files = append(files, filepath.Join("..", "..", "data", "traces", "muri-philly", f))
	}
	tab, err := FromTraces(files)
	if err != nil {
		t.Fatal(err)
	}
	tab.Provenance.Command = "sharebench profile import --from muri " + strings.Join(muriTraces, " ")
	var got bytes.Buffer
	if err := tab.Write(&got); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../results/profiles/muri-interleave.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("results/profiles/muri-interleave.json is stale: in data/traces/muri-philly run\n  sharebench profile import --from muri %s --out ../../../results/profiles/muri-interleave.json", strings.Join(muriTraces, " "))
	}

	// Both jobs of a pair run at the pair's iteration time: ξ × the job's time alone is the same
	// for both, and at least the longer of the two.
	alone := func(c profile.Config, gpus int) float64 {
		d, ok := tab.IterTime(c, gpus)
		if !ok {
			t.Fatalf("no step time for %s on %d GPUs", c, gpus)
		}
		return d.Seconds() * 1.015
	}
	xi := map[[2]profile.Config]map[int]float64{}
	for _, p := range tab.Pairs {
		if xi[[2]profile.Config{p.A, p.B}] == nil {
			xi[[2]profile.Config{p.A, p.B}] = map[int]float64{}
		}
		xi[[2]profile.Config{p.A, p.B}][p.GPUs] = p.Xi
	}
	for _, p := range tab.Pairs {
		back := xi[[2]profile.Config{p.B, p.A}][p.GPUs]
		ta, tb := p.Xi*alone(p.A, p.GPUs), back*alone(p.B, p.GPUs)
		if math.Abs(ta-tb) > 1e-9*ta || ta < max(alone(p.A, p.GPUs), alone(p.B, p.GPUs))*(1-1e-9) {
			t.Errorf("%s with %s on %d GPUs: pair times %v and %v", p.A, p.B, p.GPUs, ta, tb)
		}
	}
}

// TestDisagreeingJobs: two jobs of one model, batch and GPU count with different stage times are
// an error naming both lines.
func TestDisagreeingJobs(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "t.csv")
	csv := "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,iteration_time,resource_time_0,resource_time_1,resource_time_2,priority\n" +
		"0,1,0,100,resnet18,128,1000,0,100,60,30,10,0\n" +
		"1,1,0,100,resnet18,128,1000,0,100,50,40,10,0\n"
	if err := os.WriteFile(f, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := FromTraces([]string{f})
	if err == nil || !strings.Contains(err.Error(), "t.csv:3") || !strings.Contains(err.Error(), "t.csv:2") {
		t.Fatalf("err = %v, want one naming t.csv:3 and t.csv:2", err)
	}
}
