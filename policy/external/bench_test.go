package external_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/policy/external"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// recorder is the built-in sjf, writing each plan as a protocol reply for the replay children.
type recorder struct {
	sjf policy.Policy
	w   *bufio.Writer
	n   int
}

func (r *recorder) Name() string { return r.sjf.Name() }

// Key keeps sjf's pending order, and so its decisions.
func (r *recorder) Key(j *policy.Job) policy.Key { return r.sjf.(policy.Keyer).Key(j) }

func (r *recorder) Schedule(s *policy.State) (policy.Plan, error) {
	plan, err := r.sjf.Schedule(s)
	r.n++
	b := append([]byte(`{"type":"plan","seq":`), strconv.Itoa(r.n)...)
	b = append(b, `,"stop":[`...)
	for i, id := range plan.Stop {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, `],"start":[`...)
	for i, pl := range plan.Start {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, fmt.Sprintf(`{"job":%d,"gpus":%s,"opt":%d}`, pl.Job, intList(pl.GPUs), pl.Opt)...)
	}
	b = append(b, fmt.Sprintf(`],"wake":%d}`+"\n", plan.Wake)...)
	r.w.Write(b)
	return plan, err
}

func intList(xs []int) string {
	b := []byte{'['}
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(append(b, ']'))
}

// benchJobs are the benchmark traces: Muri's trace2 and 10^5 jobs generated as "trace gen
// --jobs 100000 --load 0.9 --cluster 8x8" does (Philly job table, the authors' eight models).
func benchJobs(b *testing.B) map[string][]trace.Job {
	f, err := os.Open(filepath.Join(repoRoot(b), "data/traces/pollux-philly-jobs/philly.csv"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pool, _, err := trace.ReadPhillyPool(f, "philly.csv", trace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	gen, err := trace.Generate(trace.GenConfig{Jobs: 100_000, Load: 0.9, GPUs: 64, Pool: pool, Models: trace.DefaultModels()}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	return map[string][]trace.Job{"trace2": readRepoTrace(b, "traces/muri-philly/trace2.csv"), "gen100k": gen}
}

// BenchmarkDecision measures the time per scheduling instant of sjf, built in and across the
// protocol: go-replay answers with sjf's recorded plans from a Go process (the cost of encoding,
// pipes, decoding and checking), py-replay the same from Python (plus json.loads), py-session
// also keeps the Python client's State, and py-sjf is the Python sjf itself.
func BenchmarkDecision(b *testing.B) {
	py := python(b)
	root := repoRoot(b)
	prof, mm := gavel(b)
	shape := cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"trace2", "gen100k"} {
		jobs := benchJobs(b)[name]
		spec := bench.SimSpec{Jobs: jobs, TraceName: name, Shape: shape, Profile: prof, ModelMap: mm, Restart: sim.RestartCost{Source: sim.RestartAuto}}
		plans := filepath.Join(b.TempDir(), "plans.jsonl")
		f, err := os.Create(plans)
		if err != nil {
			b.Fatal(err)
		}
		rec := &recorder{w: bufio.NewWriter(f)}
		rec.sjf, _ = builtin.Registry().New("sjf")
		want := run(b, spec, rec)
		rec.w.Flush()
		f.Close()
		decisions := rec.n
		replay := filepath.Join(root, "policy/external/testdata/replay.py")
		for _, v := range []struct{ name, policy, child string }{
			{"builtin", "sjf", ""},
			{"go-replay", "external:" + shellQuote(exe) + " " + shellQuote(plans), "replay"},
			{"py-replay", "external:" + shellQuote(py) + " " + shellQuote(replay) + " " + shellQuote(plans), ""},
			{"py-session", "external:" + shellQuote(py) + " " + shellQuote(replay) + " --session " + shellQuote(plans), ""},
			{"py-sjf", "external:" + pyCmd(b, "sjf.py"), ""},
		} {
			b.Run(fmt.Sprintf("trace=%s/policy=%s", name, v.name), func(b *testing.B) {
				b.Setenv(childEnv, v.child)
				var bytes int64
				for b.Loop() {
					p, err := builtin.Registry().New(v.policy)
					if err != nil {
						b.Fatal(err)
					}
					if got := run(b, spec, p); got != want {
						b.Fatalf("avg JCT %v s, sjf gives %v s", got, want)
					}
					if x, ok := p.(*external.Policy); ok {
						bytes = x.BytesOut + x.BytesIn
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*decisions), "ns/decision")
				b.ReportMetric(float64(decisions), "decisions")
				b.ReportMetric(float64(bytes)/float64(decisions), "B/decision")
			})
		}
	}
}

func run(b *testing.B, spec bench.SimSpec, p policy.Policy) float64 {
	b.Helper()
	cfg := sim.Config{Shape: spec.Shape, Restart: sim.RestartCost{Source: sim.RestartAuto}, ModelMap: spec.ModelMap, TraceName: spec.TraceName}
	res, err := sim.Run(context.Background(), cfg, spec.Jobs, p, spec.Profile, nil)
	if x, ok := p.(*external.Policy); ok {
		var totals *external.Totals
		if res != nil {
			totals = &external.Totals{Jobs: len(res.Jobs), AvgJCT: res.Summary.AvgJCT}
		}
		err = x.End(totals, err)
	}
	if err != nil {
		b.Fatal(err)
	}
	return res.Summary.AvgJCT
}
