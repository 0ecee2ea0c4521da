package replay

import (
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// fixtureModels are the authors' eight models at their batches with made-up step times (ms)
// and memory (MiB): a test fixture, not a measurement.
var fixtureModels = []struct {
	name   string
	batch  int
	iterMS float64
	memMiB int64
}{
	{"a2c", 64, 55, 2094}, {"bert", 4, 19, 8058}, {"dqn", 128, 51, 2230}, {"gpt2", 4, 44, 10532},
	{"resnet18", 128, 101, 6432}, {"shufflenet_v2_x1_0", 128, 96, 5252}, {"vgg16", 16, 21, 4224}, {"vgg19", 16, 23, 4304},
}

// fixtureProfile is a hand-made profile: every model at its batch and half of it (12% slower,
// 60% of the memory), on 1 and 8 GPUs, a restart cost, and a slowdown for every ordered pair
// drawn deterministically from [1.1, 1.9] by hashing the pair's names.
func fixtureProfile(t testing.TB) *profile.Table {
	t.Helper()
	tab := &profile.Table{GPU: "fixture GPU", GPUMemBytes: 24 * cluster.GiB, Source: "test fixture", DefaultRestartS: 3}
	var cfgs []profile.Config
	for _, m := range fixtureModels {
		mod := profile.Model{Name: m.name, DefaultBatch: m.batch, RestartS: profile.GPUMap{1: 2, 8: 4}}
		for _, sub := range []int{m.batch, m.batch / 2} {
			iter, mem := m.iterMS/1000, m.memMiB*cluster.MiB
			if sub != m.batch {
				iter, mem = iter*1.12, mem*6/10
			}
			mod.Configs = append(mod.Configs, profile.Solo{Batch: m.batch, SubBatch: sub, IterS: profile.GPUMap{1: iter, 8: iter * 1.3}, MemBytes: mem})
			cfgs = append(cfgs, profile.Config{Model: m.name, Batch: m.batch, SubBatch: sub})
		}
		tab.Models = append(tab.Models, mod)
	}
	for _, a := range cfgs {
		for _, b := range cfgs {
			h := fnv.New64a()
			h.Write([]byte(a.String() + "|" + b.String()))
			xi := 1.1 + 0.8*float64(h.Sum64()%1000)/1000
			for _, mode := range []profile.Mode{profile.Timeslice, profile.MPS} {
				tab.Pairs = append(tab.Pairs, profile.Pair{A: a, B: b, GPUs: 1, Mode: mode, Xi: xi})
				if mode == profile.MPS {
					xi = 0.9 + (xi-1)*0.7 // some MPS pairs below 1: the engine clamps them
				}
			}
		}
	}
	if err := tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	return tab
}

// fixtureTrace generates n jobs over the fixture's models, GPU demands up to maxGPUs, arriving
// so that queues form.
func fixtureTrace(t testing.TB, n, maxGPUs int, seed uint64) []trace.Job {
	t.Helper()
	var models []trace.ModelSpec
	for _, m := range fixtureModels {
		models = append(models, trace.ModelSpec{Name: m.name, Batch: m.batch, IterTime: profile.Seconds(m.iterMS / 1000), Weight: 1})
	}
	var pool []trace.Sample
	for i, g := range []int{1, 1, 1, 2, 4, 8} {
		if g <= maxGPUs {
			pool = append(pool, trace.Sample{GPUs: g, Duration: time.Duration(30+70*i) * time.Second})
		}
	}
	jobs, err := trace.Generate(trace.GenConfig{Jobs: n, Load: 1.6, GPUs: maxGPUs, MaxGPUs: maxGPUs, Pool: pool, Models: models}, rand.New(rand.NewPCG(seed, seed)))
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}
