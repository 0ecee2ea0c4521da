package sim

import (
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// testModels are the authors' eight models with their per-GPU batches and the median iteration
// times of Muri's testbed trace (ms), the memory constants of the authors' models_msg.py (MiB).
var testModels = []struct {
	name   string
	batch  int
	iterMS float64
	memMiB int64
}{
	{"a2c", 64, 555, 2094}, {"bert", 4, 192, 8058}, {"dqn", 128, 509, 2230}, {"gpt2", 4, 437, 10532},
	{"resnet18", 128, 1010, 6432}, {"shufflenet_v2_x1_0", 128, 957, 5252}, {"vgg16", 16, 214, 4224}, {"vgg19", 16, 226, 4304},
}

// testProfile is a hand-made test fixture, not a measurement: every model at its trace batch and
// half of it (sub-batch, 10% slower, 60% of the memory), and a slowdown for every ordered pair
// drawn deterministically from [1.1, 1.9] by hashing the pair's names.
func testProfile(t testing.TB) *profile.Table {
	t.Helper()
	tab := &profile.Table{GPU: "test GPU", GPUMemBytes: 48 * cluster.GiB, Source: "test", DefaultRestartS: 10}
	var cfgs []profile.Config
	for _, m := range testModels {
		mod := profile.Model{Name: m.name, DefaultBatch: m.batch, RestartS: profile.GPUMap{1: 5, 8: 8}}
		for _, sub := range []int{m.batch, m.batch / 2} {
			iter, mem := m.iterMS/1000, m.memMiB*cluster.MiB
			if sub != m.batch {
				iter, mem = iter*1.1, mem*6/10
			}
			mod.Configs = append(mod.Configs, profile.Solo{Batch: m.batch, SubBatch: sub, IterS: profile.GPUMap{1: iter}, MemBytes: mem})
			cfgs = append(cfgs, profile.Config{Model: m.name, Batch: m.batch, SubBatch: sub})
		}
		tab.Models = append(tab.Models, mod)
	}
	for _, a := range cfgs {
		for _, b := range cfgs {
			h := fnv.New64a()
			h.Write([]byte(a.String() + "|" + b.String()))
			xi := 1.1 + 0.8*float64(h.Sum64()%1000)/1000
			tab.Pairs = append(tab.Pairs, profile.Pair{A: a, B: b, GPUs: 1, Mode: profile.Timeslice, Xi: xi})
		}
	}
	if err := tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	return tab
}

func profileSeconds(s float64) time.Duration { return profile.Seconds(s) }

// dataDir returns the shared data directory, or skips the test when it is absent.
func dataDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv("SHAREBENCH_DATA")
	if d == "" {
		d = filepath.Join("..", "..", "shared", "data")
	}
	if _, err := os.Stat(d); err != nil {
		t.Skipf("shared data not found at %s (set SHAREBENCH_DATA)", d)
	}
	return d
}

// readTrace reads a trace shipped in the repository's data/ (or from the shared data).
func readTrace(t testing.TB, rel string) []trace.Job {
	t.Helper()
	path := filepath.Join("..", "data", rel)
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(dataDir(t), rel)
	}
	jobs, err := trace.ReadFile(path, trace.FormatAuto, trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}
