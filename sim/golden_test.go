package sim

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/golden"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/trace"
)

// goldenPolicies are the policies and variants whose decision logs are kept as golden files.
var goldenPolicies = []string{
	"fifo", "sjf", "tiresias", "tiresias-entry-order", "tiresias-testbed", "tiresias-authors", "sjf-ffs", "sjf-bsbf",
	"sjf-bsbf-fixed", "sjf-ffss", "sjf-bsbfs", "sjf-bsbf-preempt", `sjf{"victims":"tentative"}`,
	"srtf", "srsf", "tiresias-gittins", "themis",
}

// smallTrace generates a 40-job trace over the test profile's models: arrivals within an hour,
// GPU demands 1/2/4/8, so that queues form and sharing decisions happen on a 2x4 cluster.
func smallTrace(t testing.TB) []trace.Job {
	t.Helper()
	var models []trace.ModelSpec
	for _, m := range testModels {
		models = append(models, trace.ModelSpec{Name: m.name, Batch: m.batch, IterTime: profileSeconds(m.iterMS / 1000), Weight: 1})
	}
	var pool []trace.Sample
	for i, g := range []int{1, 1, 1, 2, 4, 8} {
		pool = append(pool, trace.Sample{GPUs: g, Duration: profileSeconds(float64(300 + 700*i))})
	}
	jobs, err := trace.Generate(trace.GenConfig{Jobs: 40, Load: 1.5, GPUs: 8, MaxGPUs: 8, Pool: pool, Models: models}, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func runLog(t testing.TB, spec string, jobs []trace.Job, shape cluster.Shape, cfg Config) ([]byte, *Result) {
	t.Helper()
	p, err := builtin.Registry().New(spec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	obs, flush := JSONLWriter(&buf)
	cfg.Shape, cfg.TraceName = shape, "small"
	r, err := Run(context.Background(), cfg, jobs, p, testProfile(t), obs)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), r
}

func goldenName(spec string) string {
	r := strings.NewReplacer("{", "_", "}", "", `"`, "", ":", "-", ",", "_")
	return "testdata/decisions-" + r.Replace(spec) + ".jsonl"
}

// TestGoldenDecisions keeps the decision log of every policy on a small trace (-update refreshes).
func TestGoldenDecisions(t *testing.T) {
	jobs := smallTrace(t)
	shape := cluster.Shape{Nodes: 2, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	for _, spec := range goldenPolicies {
		t.Run(spec, func(t *testing.T) {
			log, r := runLog(t, spec, jobs, shape, Config{Restart: RestartCost{Source: RestartAuto}})
			var jobsCSV bytes.Buffer
			if err := WriteJobs(&jobsCSV, r.Jobs); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, goldenName(spec), log)
			golden.Check(t, strings.TrimSuffix(goldenName(spec), ".jsonl")+"-jobs.csv", jobsCSV.Bytes())
		})
	}
}

// TestDeterminism runs every golden policy twice and requires identical outputs.
func TestDeterminism(t *testing.T) {
	jobs := smallTrace(t)
	shape := cluster.Shape{Nodes: 2, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	for _, spec := range goldenPolicies {
		a, ra := runLog(t, spec, jobs, shape, Config{Restart: RestartCost{Source: RestartAuto}})
		b, rb := runLog(t, spec, jobs, shape, Config{Restart: RestartCost{Source: RestartAuto}})
		var sa, sb bytes.Buffer
		WriteSummary(&sa, &ra.Summary)
		WriteSummary(&sb, &rb.Summary)
		WriteUtil(&sa, ra.Util)
		WriteUtil(&sb, rb.Util)
		if !bytes.Equal(a, b) || !bytes.Equal(sa.Bytes(), sb.Bytes()) {
			t.Errorf("%s: two runs differ", spec)
		}
	}
}

// stagedPolicies are the policies that read the stage times of Muri's dialect; their decision
// logs are kept on the first jobs of Muri's testbed trace.
var stagedPolicies = []string{"antman", "muri-s", "muri-l"}

// TestGoldenStaged keeps the decision logs of stagedPolicies on the first 40 jobs of Muri's
// testbed trace that fit 2x4 GPUs, with the lineage's effects (-update refreshes).
func TestGoldenStaged(t *testing.T) {
	var jobs []trace.Job
	for _, j := range readTrace(t, "traces/muri-testbed/cluster_trace.csv") {
		if j.GPUs <= 8 && len(jobs) < 40 {
			jobs = append(jobs, j)
		}
	}
	shape := cluster.Shape{Nodes: 2, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 4}
	for _, spec := range stagedPolicies {
		t.Run(spec, func(t *testing.T) {
			p, err := builtin.Registry().New(spec)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			obs, flush := JSONLWriter(&buf)
			cfg := Config{Shape: shape, TraceName: "staged", IterScale: 1.015, OverheadEveryEvent: true}
			r, err := Run(context.Background(), cfg, jobs, p, nil, obs)
			if err != nil {
				t.Fatal(err)
			}
			if err := flush(); err != nil {
				t.Fatal(err)
			}
			var jobsCSV bytes.Buffer
			if err := WriteJobs(&jobsCSV, r.Jobs); err != nil {
				t.Fatal(err)
			}
			name := "testdata/decisions-staged-" + spec
			golden.Check(t, name+".jsonl", buf.Bytes())
			golden.Check(t, name+"-jobs.csv", jobsCSV.Bytes())
		})
	}
}
