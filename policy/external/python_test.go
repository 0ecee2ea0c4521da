package external_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/golden"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// pyCmd is the command line of a Python example, for external:CMD.
func pyCmd(t testing.TB, example string, args ...string) string {
	t.Helper()
	words := append([]string{python(t), filepath.Join(repoRoot(t), "clients/python/examples", example)}, args...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// TestPythonSJFMatchesGo runs the Python re-implementation of sjf and the built-in sjf on
// Muri's trace3 (992 jobs, 930 preemptions under sjf) with the Gavel profile, and requires
// byte-identical decision logs and job tables; also without preemption and on a smaller
// cluster, where queues are long.
func TestPythonSJFMatchesGo(t *testing.T) {
	jobs := readRepoTrace(t, "traces/muri-philly/trace3.csv")
	prof, mm := gavel(t)
	for _, c := range []struct {
		builtin, args string
		shape         cluster.Shape
	}{
		{"sjf", "", cluster.Shape{Nodes: 8, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}},
		{"sjf-no-preempt", "--no-preempt", cluster.Shape{Nodes: 4, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}},
	} {
		t.Run(c.builtin, func(t *testing.T) {
			var args []string
			if c.args != "" {
				args = append(args, c.args)
			}
			goOut, err := simulate(t, c.builtin, jobs, c.shape, prof, mm)
			if err != nil {
				t.Fatal(err)
			}
			pyOut, err := simulate(t, "external:"+pyCmd(t, "sjf.py", args...), jobs, c.shape, prof, mm)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{sim.DecisionsFile, sim.JobsFile} {
				a, err := os.ReadFile(filepath.Join(goOut, f))
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(pyOut, f))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs between %s and the Python sjf:\n%s", f, c.builtin, golden.Diff("go", "python", a, b))
				}
			}
		})
	}
}

// exchangeJobs is the trace of the golden exchange: a long 2-GPU job preempted by a short one.
func exchangeJobs() []trace.Job {
	return []trace.Job{
		{ID: 0, Model: "big", Batch: 32, GPUs: 2, Iters: 400, Submit: 0},
		{ID: 1, Model: "small", Batch: 32, GPUs: 1, Iters: 100, Submit: 10e9},
		{ID: 2, Model: "small", Batch: 32, GPUs: 2, Iters: 50, Submit: 12e9},
	}
}

// TestGoldenExchange keeps the full exchange of the Python sjf on a three-job trace, and checks
// that docs/external-policy.md shows exactly it, and the quick-start policy as it is.
func TestGoldenExchange(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 2, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	tr := filepath.Join(t.TempDir(), "exchange.txt")
	spec := `external{"cmd":` + quoteJSON(pyCmd(t, "sjf.py")) + `,"transcript":` + quoteJSON(tr) + `}`
	if _, err := simulate(t, spec, exchangeJobs(), shape, fixtureProfile(t), nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/exchange.txt", got)
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs/external-policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("```\n"+string(got)+"```\n")) {
		t.Errorf("docs/external-policy.md does not show the exchange of testdata/exchange.txt in a ``` block")
	}
	quick, err := os.ReadFile(filepath.Join(repoRoot(t), "clients/python/examples/fewest_gpus.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("```python\n"+string(quick)+"```\n")) {
		t.Errorf("docs/external-policy.md does not show clients/python/examples/fewest_gpus.py as it is")
	}
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestPythonClientUnits runs the Python client's own tests (which replay the golden exchange).
func TestPythonClientUnits(t *testing.T) {
	cmd := exec.Command(python(t), "-m", "unittest", "discover", "-s", "tests", "-t", ".")
	cmd.Dir = filepath.Join(repoRoot(t), "clients/python")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestLearnedExample trains the linear scorer for a few episodes through the environment loop
// and checks the loop's accounting against the engine: the first episode (zero weights, so
// FIFO without preemption) must give fifo-no-preempt's average JCT, and the trained weights,
// run as an external policy, the average JCT their training episode reported.
func TestLearnedExample(t *testing.T) {
	py := python(t)
	root := repoRoot(t)
	lines, err := os.ReadFile(filepath.Join(root, "data/traces/muri-philly/trace3.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prefix := filepath.Join(dir, "trace3-200.csv")
	if err := os.WriteFile(prefix, []byte(strings.Join(strings.SplitAfter(string(lines), "\n")[:201], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "simulate")
	weights := filepath.Join(dir, "w.json")
	simArgs := []string{"--trace", prefix, "--cluster", "2x8", "--drop-oversized",
		"--profile", filepath.Join(root, "results/profiles/gavel-v100.json"), "--model-map", filepath.Join(root, "bench/modelmaps/gavel.csv")}
	cmd := exec.Command(py, append([]string{filepath.Join(root, "clients/python/examples/learned.py"), "train",
		"--sharebench", exe, "--episodes", "4", "--baselines", "--weights", weights, "--"}, simArgs...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("learned.py train: %v\n%s", err, stderr)
	}
	var res struct {
		AvgJCT   float64 `json:"avg_jct_s"`
		First    float64 `json:"first_avg_jct_s"`
		FIFO     float64 `json:"fifo-no-preempt_avg_jct_s"`
		Episodes int     `json:"episodes"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Episodes != 4 || res.First != res.FIFO {
		t.Errorf("first episode avg JCT %v s, fifo-no-preempt %v s (episodes %d)", res.First, res.FIFO, res.Episodes)
	}
	t.Setenv(childEnv, "")
	prof, mm := gavel(t)
	jobs, _, err := trace.DropOversized(readFile(t, prefix), "prefix", 16, true)
	if err != nil {
		t.Fatal(err)
	}
	shape := cluster.Shape{Nodes: 2, GPUsPerNode: 8, GPUMemBytes: 48 * cluster.GiB, MaxShare: 2}
	run, err := simulate(t, "external:"+pyCmd(t, "learned.py", "--weights", weights), jobs, shape, prof, mm)
	if err != nil {
		t.Fatal(err)
	}
	var sum sim.Summary
	b, err := os.ReadFile(filepath.Join(run, sim.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.AvgJCT != res.AvgJCT {
		t.Errorf("trained weights: avg JCT %v s as a policy, %v s in training", sum.AvgJCT, res.AvgJCT)
	}
}

func readFile(t testing.TB, path string) []trace.Job {
	t.Helper()
	jobs, err := trace.ReadFile(path, trace.FormatAuto, trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// TestQuickStartPolicy runs the documentation's quick-start policy: it shares GPUs, only with
// jobs the profile pairs it with, and every plan passes the checks.
func TestQuickStartPolicy(t *testing.T) {
	shape := cluster.Shape{Nodes: 1, GPUsPerNode: 4, GPUMemBytes: 16 * cluster.GiB, MaxShare: 2}
	out, err := simulate(t, "external:"+pyCmd(t, "fewest_gpus.py"), fixtureJobs(), shape, fixtureProfile(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var s sim.Summary
	b, err := os.ReadFile(filepath.Join(out, sim.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 7 || s.SharedJobs == 0 {
		t.Errorf("%d jobs, %d shared; want 7 jobs, some shared", s.Jobs, s.SharedJobs)
	}
}
