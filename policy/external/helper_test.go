package external_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// The test binary doubles as a scripted policy process: with childEnv set it speaks the
// protocol on its standard input and output instead of running the tests.
const (
	childEnv = "SHAREBENCH_TEST_CHILD" // mode: plan, hang, crash, garbage, version, idle, or simulate
	planEnv  = "SHAREBENCH_TEST_PLAN"  // the plan of mode "plan", without type and seq
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode == "simulate" {
		os.Exit(simulateMain(os.Args[1:]))
	} else if mode == "replay" {
		os.Exit(replayMain(os.Args[1]))
	} else if mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// replayMain answers each state with the next line of a file of recorded plans, parsing
// nothing: the benchmark's measure of the Go side's own cost.
func replayMain(plans string) int {
	f, err := os.Open(plans)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rec := bufio.NewReader(f)
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriter(os.Stdout)
	if _, err := in.ReadSlice('\n'); err != nil {
		return 2
	}
	out.WriteString(`{"type":"hello","protocol":1,"name":"replay"}` + "\n")
	out.Flush()
	for {
		line, err := in.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = in.ReadSlice('\n')
		}
		if err != nil || strings.HasPrefix(string(line), `{"type":"end"`) {
			return 0
		}
		plan, err := rec.ReadBytes('\n')
		if err != nil {
			return 2
		}
		out.Write(plan)
		out.Flush()
	}
}

// simulateMain stands in for "sharebench simulate" (the flags the Python environment loop
// and learned.py pass), so that the loop is tested without building the CLI.
func simulateMain(args []string) int {
	if len(args) == 0 || args[0] != "simulate" {
		fmt.Fprintln(os.Stderr, "usage: simulate FLAGS")
		return 2
	}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "")
	shapeFlag := fs.String("cluster", "", "")
	profPath := fs.String("profile", "", "")
	mapPath := fs.String("model-map", "", "")
	pol := fs.String("policy", "", "")
	out := fs.String("out", "", "")
	drop := fs.Bool("drop-oversized", false, "")
	noLog := fs.Bool("no-decisions", false, "")
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "simulate:", err)
		return 1
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	shape, err := cluster.ParseShape(*shapeFlag)
	if err != nil {
		return fail(err)
	}
	shape.GPUMemBytes, shape.MaxShare = 48*cluster.GiB, 2
	prof, err := profile.LoadFile(*profPath)
	if err != nil {
		return fail(err)
	}
	mm, err := profile.LoadModelMapFile(*mapPath)
	if err != nil {
		return fail(err)
	}
	jobs, err := trace.ReadFile(*tracePath, trace.FormatAuto, trace.Options{Seed: 1})
	if err != nil {
		return fail(err)
	}
	_, err = bench.Simulate(context.Background(), bench.SimSpec{Jobs: jobs, TraceName: filepath.Base(*tracePath), Shape: shape,
		Policy: *pol, Profile: prof, ProfileName: *profPath, ModelMap: mm, DropOversized: *drop, Restart: sim.RestartCost{Source: sim.RestartAuto}, Seed: 1}, *out, !*noLog)
	if err != nil {
		return fail(err)
	}
	return 0
}

func child(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<24)
	out := bufio.NewWriter(os.Stdout)
	reply := func(s string) {
		out.WriteString(s + "\n")
		out.Flush()
	}
	if !in.Scan() {
		return 2
	}
	switch mode {
	case "version":
		reply(`{"type":"hello","protocol":99}`)
	case "garbage":
		reply(`{"type":"hello","protocol":1}`)
	default:
		reply(`{"type":"hello","protocol":1,"name":"test child"}`)
	}
	for in.Scan() {
		var m struct {
			Type string `json:"type"`
			Seq  int    `json:"seq"`
		}
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		if m.Type == "end" {
			return 0
		}
		switch mode {
		case "hang":
			time.Sleep(time.Hour)
		case "crash":
			fmt.Fprintln(os.Stderr, "boom: the policy fell over")
			return 3
		case "garbage":
			reply("this is not JSON")
		case "idle":
			reply(fmt.Sprintf(`{"type":"plan","seq":%d}`, m.Seq))
		case "plan":
			body := strings.TrimPrefix(os.Getenv(planEnv), "{")
			reply(fmt.Sprintf(`{"type":"plan","seq":%d,%s`, m.Seq, body))
		}
	}
	return 0
}

// childSpec is the policy spec that runs this test binary as a scripted child.
func childSpec(t *testing.T, mode, plan string, extra string) string {
	t.Helper()
	t.Setenv(childEnv, mode)
	t.Setenv(planEnv, plan)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"cmd": shellQuote(exe)})
	return "external" + strings.TrimSuffix(string(args), "}") + extra + "}"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fixtureProfile is a hand-made test profile, not a measurement: "big" (10 GiB) and "small"
// (4 GiB) share with each other and themselves; "lonely" (4 GiB) has no pairs at all.
func fixtureProfile(t testing.TB) *profile.Table {
	t.Helper()
	tab := &profile.Table{GPU: "test GPU", GPUMemBytes: 16 * cluster.GiB, Source: "test"}
	models := []struct {
		name string
		mem  int64
		iter float64
	}{{"big", 10, 0.5}, {"small", 4, 0.2}, {"lonely", 4, 0.3}}
	for _, m := range models {
		tab.Models = append(tab.Models, profile.Model{Name: m.name, DefaultBatch: 32, Configs: []profile.Solo{
			{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: m.iter, 2: m.iter * 1.1}, MemBytes: m.mem * cluster.GiB}}})
	}
	cfg := func(m string) profile.Config { return profile.Config{Model: m, Batch: 32, SubBatch: 32} }
	for _, a := range []string{"big", "small"} {
		for _, b := range []string{"big", "small"} {
			tab.Pairs = append(tab.Pairs, profile.Pair{A: cfg(a), B: cfg(b), GPUs: 1, Mode: profile.Timeslice, Xi: 1.3})
		}
	}
	if err := tab.Normalize(); err != nil {
		t.Fatal(err)
	}
	return tab
}

// fixtureJobs are the jobs of the plan-check tests: all submitted at 0 but job 4 (at 100 s).
func fixtureJobs() []trace.Job {
	j := func(id trace.JobID, model string, gpus int, submitS float64) trace.Job {
		return trace.Job{ID: id, Model: model, Batch: 32, GPUs: gpus, Iters: 1000, Submit: profile.Seconds(submitS)}
	}
	return []trace.Job{j(0, "big", 1, 0), j(1, "small", 1, 0), j(2, "small", 1, 0), j(3, "lonely", 1, 0),
		j(4, "big", 2, 100), j(5, "small", 2, 0), j(6, "big", 1, 0)}
}

// simulate runs spec on jobs and profile through bench.Simulate into a fresh run directory;
// it returns the error and the directory.
func simulate(t *testing.T, spec string, jobs []trace.Job, shape cluster.Shape, prof *profile.Table, mm *profile.ModelMap) (string, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	_, err := bench.Simulate(context.Background(), bench.SimSpec{Jobs: jobs, TraceName: "fixture", Shape: shape, Policy: spec,
		Profile: prof, ProfileName: "fixture.json", ModelMap: mm, Restart: sim.RestartCost{Source: sim.RestartAuto}}, out, true)
	return out, err
}

// python returns the Python interpreter, skipping the test without one.
func python(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("python3 not found")
	return ""
}

// repoRoot is the repository's root directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// readRepoTrace reads a trace shipped in data/.
func readRepoTrace(t testing.TB, rel string) []trace.Job {
	t.Helper()
	jobs, err := trace.ReadFile(filepath.Join(repoRoot(t), "data", rel), trace.FormatAuto, trace.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// gavel loads the shipped Gavel V100 profile and its model map.
func gavel(t testing.TB) (*profile.Table, *profile.ModelMap) {
	t.Helper()
	root := repoRoot(t)
	prof, err := profile.LoadFile(filepath.Join(root, "results/profiles/gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	mm, err := profile.LoadModelMapFile(filepath.Join(root, "bench/modelmaps/gavel.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return prof, mm
}
