package walk_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// TestShareIndexEqualsScan runs sjf-bsbf, which finds partners with its share index, and the
// reference executor, whose rule scans every GPU, on traces made of identical jobs arriving in bursts:
// residents with equal remaining times tie on t_con, and only the scan order tells them apart.
// The decision logs must be equal.
func TestShareIndexEqualsScan(t *testing.T) {
	prof, err := profile.LoadFile(filepath.Join("..", "..", "results", "profiles", "gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	models := []string{"resnet18", "lm", "a3c", "transformer"}
	shapes := []cluster.Shape{
		{Nodes: 4, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2},
		{Nodes: 3, GPUsPerNode: 8, GPUMemBytes: 32 * cluster.GiB, MaxShare: 2},
		{Nodes: 6, GPUsPerNode: 2, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2},
	}
	shared := 0
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		shape := shapes[seed%uint64(len(shapes))]
		var jobs []trace.Job
		at := time.Duration(0)
		for id := 0; id < 300; {
			// A burst of identical jobs, then a gap.
			n := 1 + rng.IntN(6)
			m := models[rng.IntN(len(models))]
			gpus := []int{1, 1, 1, 2, 2, 4}[rng.IntN(6)]
			iters := int64(100 * (1 + rng.IntN(4)))
			for range n {
				jobs = append(jobs, trace.Job{ID: trace.JobID(id), Submit: at, GPUs: gpus, Iters: iters, Model: m})
				id++
			}
			at += time.Duration(rng.IntN(3)) * 20 * time.Second
		}
		cfg := sim.Config{Shape: shape, TraceName: "bursts"}
		for _, spec := range []string{"sjf-bsbf", `sjf-bsbf{"sub_batch":false}`} {
			_, logs := decideBoth(t, cfg, jobs, prof, spec)
			got, want := logs[0], logs[1]
			if !bytes.Equal(got, want) {
				t.Errorf("seed %d, %s: the share index and the scan decide differently\n%s", seed, spec, firstDiff(got, want))
			}
			shared += bytes.Count(got, []byte(`"partners":[`)) - bytes.Count(got, []byte(`"partners":[]`))
		}
	}
	if shared < 500 {
		t.Errorf("only %d shared starts: the traces do not exercise the index", shared)
	}
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\n fast:      %s\n reference: %s", i+1, la[i], lb[i])
		}
	}
	return "one log is a prefix of the other"
}

// TestShareIndexBranchPoint: a resident whose remaining time is exactly the share check's
// branch point (the pending job's own time, for two jobs of one configuration) lies in both of
// the index's ranges; the index must still offer its GPUs once. Job 2 arrives when job 1 has
// job 2's 200 iterations left, on the two GPUs job 1 holds alone.
func TestShareIndexBranchPoint(t *testing.T) {
	prof, err := profile.LoadFile(filepath.Join("..", "..", "results", "profiles", "gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	var step float64
	for _, m := range prof.Models {
		for _, c := range m.Configs {
			if m.Name == "resnet18" && c.Batch == 16 && c.SubBatch == 16 {
				step = c.IterS[2]
			}
		}
	}
	if !(step > 0) {
		t.Fatal("the profile has no step time for resnet18 at batch 16 on 2 GPUs")
	}
	jobs := []trace.Job{
		{ID: 1, Submit: 0, GPUs: 2, Iters: 300, Model: "resnet18", Batch: 16},
		{ID: 2, Submit: 100 * profile.Seconds(step), GPUs: 2, Iters: 200, Model: "resnet18", Batch: 16},
	}
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 2, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	_, logs := decideBoth(t, sim.Config{Shape: shape, TraceName: "branch-point"}, jobs, prof, "sjf-bsbf")
	if !bytes.Equal(logs[0], logs[1]) {
		t.Errorf("the share index and the scan decide differently\n%s", firstDiff(logs[0], logs[1]))
	}
	if !bytes.Contains(logs[0], []byte(`"partners":[1]`)) {
		t.Errorf("job 2 does not share with job 1:\n%s", logs[0])
	}
}
