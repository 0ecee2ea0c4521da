package sim

import (
	"context"
	"fmt"
	"testing"

	"sharebench/cluster"
	"sharebench/policy"
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
