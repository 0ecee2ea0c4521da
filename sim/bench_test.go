package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

var benchPolicies = []string{"fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf"}

// BenchmarkTrace2 replays Muri's trace2 (5,755 jobs) on 8x8 GPUs under every policy.
func BenchmarkTrace2(b *testing.B) {
	jobs := readTrace(b, "traces/muri-philly/trace2.csv")
	prof := testProfile(b)
	shape := cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}
	for _, name := range benchPolicies {
		b.Run(fmt.Sprintf("policy=%s/jobs=%d", name, len(jobs)), func(b *testing.B) {
			for b.Loop() {
				p, err := policy.Builtin().New(name)
				if err != nil {
					b.Fatal(err)
				}
				r, err := Run(context.Background(), Config{Shape: shape, TraceName: "trace2"}, jobs, p, prof, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.Summary.AvgJCT, "avgJCT_s")
				b.ReportMetric(float64(r.Summary.Preemptions), "preempts")
			}
		})
	}
}

// BenchmarkPhilly replays the 82,247-job Philly table on 256x8 = 2,048 GPUs.
func BenchmarkPhilly(b *testing.B) {
	jobs := readTrace(b, "traces/pollux-philly-jobs/philly.csv")
	prof := testProfile(b)
	shape := cluster.Shape{Nodes: 256, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}
	jobs, _, err := trace.DropOversized(jobs, "philly", shape.GPUs(), true)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range benchPolicies {
		b.Run(fmt.Sprintf("policy=%s/jobs=%d", name, len(jobs)), func(b *testing.B) {
			for b.Loop() {
				p, _ := policy.Builtin().New(name)
				r, err := Run(context.Background(), Config{Shape: shape, TraceName: "philly"}, jobs, p, prof, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.Summary.AvgJCT, "avgJCT_s")
				b.ReportMetric(float64(r.Summary.Preemptions), "preempts")
			}
		})
	}
}

// BenchmarkRun replays synthetic traces of growing size (Poisson arrivals at load 0.9 on
// 2,048 GPUs, sizes and durations drawn from the Philly table) to show the per-job cost.
func BenchmarkRun(b *testing.B) {
	pool, err := phillyPool(b)
	if err != nil {
		b.Fatal(err)
	}
	prof := testProfile(b)
	shape := cluster.Shape{Nodes: 256, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		jobs, err := trace.Generate(trace.GenConfig{Jobs: n, Load: 0.9, GPUs: shape.GPUs(), MaxGPUs: shape.GPUs(),
			Pool: pool, Models: testSpecs()}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range benchPolicies {
			b.Run(fmt.Sprintf("policy=%s/jobs=%d", name, n), func(b *testing.B) {
				var r *Result
				for b.Loop() {
					p, _ := policy.Builtin().New(name)
					if r, err = Run(context.Background(), Config{Shape: shape, TraceName: "synthetic"}, jobs, p, prof, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/job")
				b.ReportMetric(r.Summary.AvgJCT, "avgJCT_s")
			})
		}
	}
}

// BenchmarkTrace2Gavel replays trace2 with the shipped default profile (Gavel V100) and model
// map, as the reproduction does.
func BenchmarkTrace2Gavel(b *testing.B) {
	jobs := readTrace(b, "traces/muri-philly/trace2.csv")
	prof, err := profile.LoadFile("../results/profiles/gavel-v100.json")
	if err != nil {
		b.Fatal(err)
	}
	mm, err := profile.LoadModelMapFile("../bench/modelmaps/gavel.csv")
	if err != nil {
		b.Fatal(err)
	}
	shape := cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}
	for _, name := range benchPolicies {
		b.Run(fmt.Sprintf("policy=%s/jobs=%d", name, len(jobs)), func(b *testing.B) {
			var r *Result
			for b.Loop() {
				p, _ := policy.Builtin().New(name)
				if r, err = Run(context.Background(), Config{Shape: shape, ModelMap: mm, TraceName: "trace2"}, jobs, p, prof, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.Summary.AvgJCT, "avgJCT_s")
			b.ReportMetric(float64(r.Summary.Preemptions), "preempts")
		})
	}
}
