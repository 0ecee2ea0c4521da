package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
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
				p, err := builtin.Registry().New(name)
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

// BenchmarkTrace2Gavel replays trace2 with the shipped default profile (Gavel V100) and model
// map on the profile's GPUs with restart costs, as "sharebench simulate" does (the engine alone:
// cmd/sharebench's benchmarks time the command, the Philly table and synthetic traces).
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
	shape := cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: prof.GPUMemBytes, MaxShare: 2}
	for _, name := range benchPolicies {
		b.Run(fmt.Sprintf("policy=%s/jobs=%d", name, len(jobs)), func(b *testing.B) {
			var r *Result
			for b.Loop() {
				p, _ := builtin.Registry().New(name)
				cfg := Config{Shape: shape, ModelMap: mm, Restart: RestartCost{Source: RestartAuto}, TraceName: "trace2"}
				if r, err = Run(context.Background(), cfg, jobs, p, prof, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.Summary.AvgJCT, "avgJCT_s")
			b.ReportMetric(float64(r.Summary.Preemptions), "preempts")
		})
	}
}

// BenchmarkMuriInterleave replays Muri's trace4 (2,638 jobs) under muri-s and muri-l with the
// lineage's flags: the slowest runs of Muri's study, nearly all of it the blossom matching that
// forms the groups at every event.
func BenchmarkMuriInterleave(b *testing.B) {
	jobs := readTrace(b, "traces/muri-philly/trace4.csv")
	for _, name := range []string{"muri-s", "muri-l"} {
		b.Run(fmt.Sprintf("policy=%s/jobs=%d", name, len(jobs)), func(b *testing.B) {
			cfg := muriConfig("trace4", true)
			cfg.Shape.MaxShare = builtin.DefaultMaxShare(name)
			var r *Result
			for b.Loop() {
				p, err := builtin.Registry().New(name)
				if err != nil {
					b.Fatal(err)
				}
				if r, err = Run(context.Background(), cfg, jobs, p, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.Summary.AvgJCT, "avgJCT_s")
		})
	}
}
