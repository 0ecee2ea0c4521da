package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// The benchmarks of this file time what users run: "sharebench simulate" on the shipped traces
// with the shipped default profile (Gavel V100) and model map, in process and as a whole process
// (start, parse, simulate, write). They pin the speed targets of the simulator (REPRODUCE.md):
// trace2 per policy, the Philly table as E3 runs it, and synthetic traces of 10^4 to 10^6 jobs
// at loads 0.7 and 0.9 on 2,048 GPUs, with the peak memory of the largest.

// benchPolicies are the policies the paper's experiments run, and the testbed's Tiresias.
var benchPolicies = []string{"fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf", "tiresias-testbed"}

// execEnv makes the test binary run the command line given after its name and exit, so that
// the whole-process benchmarks need no separate build.
const execEnv = "SHAREBENCH_BENCH_EXEC"

// TestMain also lets a test run the test binary as the sharebench command itself, to send it
// signals (SHAREBENCH_TEST_AS_MAIN).
func TestMain(m *testing.M) {
	if os.Getenv("SHAREBENCH_TEST_AS_MAIN") == "1" {
		main()
	}
	if os.Getenv(execEnv) == "1" {
		os.Exit(execute(context.Background(), os.Args[1:], io.Discard, os.Stderr))
	}
	code := m.Run()
	if genDir != "" {
		os.RemoveAll(genDir)
	}
	os.Exit(code)
}

// genDir holds the synthetic traces the benchmarks generate, once per process.
var genDir string

const (
	benchProfile  = "../../results/profiles/gavel-v100.json"
	benchModelMap = "../../bench/modelmaps/gavel.csv"
)

func benchData(b *testing.B, rel string) string {
	b.Helper()
	p := filepath.Join("../../data", rel)
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s not found", p)
	}
	return p
}

// simulateArgs returns a simulate command line writing into a fresh directory.
func simulateArgs(b *testing.B, policy string, args ...string) []string {
	out := filepath.Join(b.TempDir(), "run")
	return append([]string{"simulate", "--policy", policy, "--profile", benchProfile, "--out", out}, args...)
}

// inProcess runs the command line in this process at every iteration.
func inProcess(b *testing.B, args []string) {
	for b.Loop() {
		if code := execute(context.Background(), args, io.Discard, os.Stderr); code != 0 {
			b.Fatalf("%v: exit status %d", args, code)
		}
	}
}

// wholeProcess runs the command line as a process at every iteration and reports its peak
// resident memory.
func wholeProcess(b *testing.B, args []string) {
	var peak int64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), execEnv+"=1")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %v", args, err)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss) // KiB on Linux
		}
	}
	b.ReportMetric(float64(peak)/1024, "peakRSS_MiB")
}

func trace2Args(b *testing.B, policy string) []string {
	return simulateArgs(b, policy, "--trace", benchData(b, "traces/muri-philly/trace2.csv"), "--cluster", "8x8",
		"--model-map", benchModelMap)
}

// BenchmarkTrace2 replays Muri's trace2 (5,755 jobs) on 8x8 GPUs, writing the decision log.
func BenchmarkTrace2(b *testing.B) {
	for _, p := range benchPolicies {
		b.Run("policy="+p, func(b *testing.B) { inProcess(b, trace2Args(b, p)) })
	}
}

// BenchmarkTrace2Process is BenchmarkTrace2 as a whole process.
func BenchmarkTrace2Process(b *testing.B) {
	for _, p := range benchPolicies {
		b.Run("policy="+p, func(b *testing.B) { wholeProcess(b, trace2Args(b, p)) })
	}
}

// BenchmarkPhillyE3 replays the 82,247-job Philly table on 80x8 GPUs as E3 does: the authors'
// models at the profile's step times, 48 GiB GPUs, no decision log.
func BenchmarkPhillyE3(b *testing.B) {
	for _, p := range benchPolicies {
		b.Run("policy="+p, func(b *testing.B) {
			inProcess(b, simulateArgs(b, p, "--trace", benchData(b, "traces/pollux-philly-jobs/philly.csv"),
				"--trace-format", "philly", "--cluster", "80x8", "--gpu-mem-gib", "48", "--model-map", benchModelMap, "--no-decisions"))
		})
	}
}

// synthetic generates (once per process) n jobs at the load on 256x8 GPUs from the profile's
// models, as "trace gen --profile" does.
func synthetic(b *testing.B, n int, load float64) string {
	b.Helper()
	if genDir == "" {
		var err error
		if genDir, err = os.MkdirTemp("", "sharebench-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(genDir, fmt.Sprintf("synthetic-%d-%g.csv", n, load))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	o := traceGenOpts{jobs: n, load: load, cluster: "256x8", seed: 1, profile: benchProfile,
		philly: benchData(b, "traces/pollux-philly-jobs/philly.csv"), out: path}
	if err := traceGen(context.Background(), o, io.Discard, io.Discard); err != nil {
		b.Fatal(err)
	}
	return path
}

func syntheticArgs(b *testing.B, policy string, n int, load float64) []string {
	return simulateArgs(b, policy, "--trace", synthetic(b, n, load), "--cluster", "256x8", "--no-decisions")
}

// reportWork reports the cost per job and, from the run's summary, the preemptions per job: near
// saturation the preemptive policies' decisions themselves grow with the queue (a preemption is
// a stop, a restart and the walks between), which ns/job alone does not tell apart from a cost
// that grows with what is queued.
func reportWork(b *testing.B, args []string, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/job")
	out := args[slices.Index(args, "--out")+1]
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		b.Fatal(err)
	}
	var sum struct {
		Preemptions int64 `json:"preemptions"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(sum.Preemptions)/float64(n), "preempts/job")
}

// BenchmarkSynthetic replays synthetic traces of 10^4 and 10^5 jobs at loads 0.7 and 0.9 on
// 2,048 GPUs; ns/job shows how the cost per job grows with the queue, preempts/job how much of
// that growth is decisions.
func BenchmarkSynthetic(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, load := range []float64{0.7, 0.9} {
			for _, p := range benchPolicies[:5] {
				b.Run(fmt.Sprintf("jobs=%d/load=%g/policy=%s", n, load, p), func(b *testing.B) {
					args := syntheticArgs(b, p, n, load)
					inProcess(b, args)
					reportWork(b, args, n)
				})
			}
		}
	}
}

// BenchmarkSyntheticMillion replays 10^6 synthetic jobs at loads 0.7 and 0.9 on 2,048 GPUs as
// whole processes, with their peak memory.
func BenchmarkSyntheticMillion(b *testing.B) {
	const n = 1_000_000
	for _, load := range []float64{0.7, 0.9} {
		for _, p := range benchPolicies[:5] {
			b.Run(fmt.Sprintf("jobs=%d/load=%g/policy=%s", n, load, p), func(b *testing.B) {
				args := syntheticArgs(b, p, n, load)
				wholeProcess(b, args)
				reportWork(b, args, n)
			})
		}
	}
}
