package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leftovers lists the temporary directories of out that are left next to it.
func leftovers(t *testing.T, out string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHardeningCases: every input of the hardening issue is a one-line error (positioned where
// it comes from a file), and nothing is written.
func TestHardeningCases(t *testing.T) {
	_, prof, tr := fixture(t, smallTrace)
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withIter := "job_id,submit_s,num_gpu,model,batch_size,iterations,iteration_time_s\n"
	huge := file("huge.csv", "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,a,32,9223372036854775807\n")
	long := file("long.csv", withIter+"1,0,1,a,32,1000000000000,1000\n")
	late := file("late.csv", withIter+"1,9223372036,1,a,32,1,1\n")
	header := file("header.csv", strings.Repeat("h", 1<<20-1)+"\n")
	profText, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	badProf := func(name, old, new string) string {
		if !bytes.Contains(profText, []byte(old)) {
			t.Fatalf("profile fixture lacks %s", old)
		}
		return file(name, strings.Replace(string(profText), old, new, 1))
	}
	iter10 := badProf("iter1e10.json", `"1": 0.5`, `"1": 1e10`)
	iter300 := badProf("iter1e300.json", `"1": 0.5`, `"1": 1e300`)
	iterTiny := badProf("iter1e-300.json", `"1": 0.5`, `"1": 1e-300`)
	xi := badProf("xi.json", `"xi": 1.2`, `"xi": 1e12`)
	restart := badProf("restart.json", `"source": "test",`, `"source": "test", "default_restart_s": 1e300,`)

	sim := func(trace, profile string, extra ...string) []string {
		args := []string{"simulate", "--trace", trace, "--cluster", "1x4", "--policy", "sjf-bsbf", "--out", filepath.Join(dir, "run")}
		if profile != "" {
			args = append(args, "--profile", profile)
		}
		return append(args, extra...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{sim(huge, prof), "huge.csv:2: job 1: 9223372036854775807 × 0.5 s per step (a/32/32) ends after more than 292 years, beyond the 100-year horizon"},
		{sim(long, ""), "long.csv:2: iterations: 1000000000000 × 1000 s per iteration ends after more than 292 years, beyond the 100-year horizon"},
		{sim(late, ""), "late.csv:2: submit_s: submits after 292.5 years, beyond the 100-year horizon"},
		{sim(tr, iter10), "iter1e10.json: model a: config a/32/32: iter_s: GPU count 1: want seconds in [1e-09, 3.1536e+09], got 1e+10"},
		{sim(tr, iter300), "got 1e+300"},
		{sim(tr, iterTiny), "got 1e-300"},
		{sim(tr, xi), "xi must be a number in (0, 1000], got 1e+12"},
		{sim(tr, restart), "default_restart_s: want seconds in [0, 3.1536e+07], got 1e+300"},
		{sim(tr, prof, "--cluster", "2305843009213693953x8"), `cluster "2305843009213693953x8": more than the maximum of 1048576 GPUs`},
		{sim(tr, prof, "--cluster", "100000x100000"), `cluster "100000x100000": 100000 GPUs per node exceeds the maximum of 1024`},
		{sim(tr, prof, "--cluster", "4294967297x1024"), `cluster "4294967297x1024": more than the maximum of 1048576 GPUs`},
		{sim(tr, prof, "--max-share", "1000000000"), "max jobs per GPU must be in [1, 16], got 1000000000"},
		{sim(tr, prof, "--gpu-mem-gib", "1e300"), "--gpu-mem-gib 1e+300: want GiB in (0, 1024]"},
		{sim(tr, prof, "--interval", "9000000000"), "simulate: --interval 9e+09 s: want 0 (event-driven) or seconds in [0.001, 3.1536e+07]"},
		{sim(tr, prof, "--interval", "1e300"), "simulate: --interval 1e+300 s"},
		{sim(tr, prof, "--interval", "-1"), "simulate: --interval -1 s"},
		{sim(tr, prof, "--interval", "NaN"), "simulate: --interval NaN s"},
		{sim(header, prof), `header.csv:1: unknown header "hhhh`},
		{[]string{"trace", "validate", "--in", long}, "long.csv:2: iterations: 1000000000000 × 1000 s per iteration ends after more than 292 years"},
		{[]string{"trace", "validate", "--in", late}, "late.csv:2: submit_s: submits after 292.5 years"},
		{[]string{"trace", "validate", "--in", tr, "--cluster", "2305843009213693953x8"}, `--cluster "2305843009213693953x8": more than the maximum of 1048576 GPUs`},
		{[]string{"trace", "validate", "--in", tr, "--cluster", "100000x100000"}, "100000 GPUs per node exceeds the maximum of 1024"},
		{[]string{"trace", "gen", "--jobs", "300000000", "--load", "1", "--cluster", "8x8", "--out", "-"}, "trace gen: --jobs 300000000: want a number of jobs in [1, 10000000]"},
		{[]string{"trace", "gen", "--jobs", "10", "--load", "1", "--cluster", "100000x100000", "--out", "-"}, "100000 GPUs per node exceeds the maximum of 1024"},
	} {
		code, out, errOut := execCLI(tc.args...)
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) || len(errOut) > 2048 {
			t.Errorf("%.200q: exit %d, stderr %.600q; want one line with %q", tc.args, code, errOut, tc.want)
		}
		if tc.args[0] == "trace" && tc.args[1] == "gen" && out != "" {
			t.Errorf("%q: wrote %d bytes", tc.args, len(out))
		}
		if exists(filepath.Join(dir, "run")) || len(leftovers(t, filepath.Join(dir, "run"))) > 0 {
			t.Fatalf("%q: left output behind", tc.args)
		}
	}
}

// startSimulate starts the sharebench command in a child process on a run that would take
// years (1 ms rounds while a one-year job holds the only GPU) and returns once it has begun
// writing its temporary run directory next to out.
func startSimulate(t *testing.T, out string) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	_, prof, tr := fixture(t, "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,a,32,63072000\n2,1,1,b,32,10\n")
	cmd := exec.Command(os.Args[0], "simulate", "--trace", tr, "--profile", prof, "--cluster", "1x1",
		"--policy", "fifo", "--interval", "0.001", "--out", out)
	cmd.Env = append(os.Environ(), "SHAREBENCH_TEST_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for len(leftovers(t, out)) == 0 { // wait on state: the run has started writing
		select {
		case err := <-done:
			t.Fatalf("simulate ended before it started writing: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return cmd, &stderr, done
}

// TestSignalEndsRunCleanly: SIGINT or SIGTERM ends a long run promptly with a one-line error,
// leaving the previous run in --out as it was and no temporary directory.
func TestSignalEndsRunCleanly(t *testing.T) {
	_, prof, tr := fixture(t, smallTrace)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		out := filepath.Join(t.TempDir(), "run")
		if _, err := simulateTo(t, prof, tr, out); err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(filepath.Join(out, "jobs.csv"))
		if err != nil {
			t.Fatal(err)
		}
		cmd, stderr, done := startSimulate(t, out)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err = <-done
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("%v: exit %v, want status 1", sig, err)
		}
		if want := "Error: simulate: interrupted; " + out + " is left as it was\n"; stderr.String() != want {
			t.Errorf("%v: stderr %q, want %q", sig, stderr.String(), want)
		}
		after, err := os.ReadFile(filepath.Join(out, "jobs.csv"))
		if err != nil || !bytes.Equal(before, after) {
			t.Errorf("%v: the previous run changed (%v)", sig, err)
		}
		if l := leftovers(t, out); len(l) > 0 {
			t.Errorf("%v: left %v", sig, l)
		}
	}
}

// TestKilledRunCleanedNext: SIGKILL leaves the temporary directory behind (nothing can stop
// that); the next run writing the same --out removes it.
func TestKilledRunCleanedNext(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	cmd, _, done := startSimulate(t, out)
	cmd.Process.Kill()
	<-done
	if len(leftovers(t, out)) == 0 {
		t.Fatal("SIGKILL left nothing behind: this test tests nothing")
	}
	_, prof, tr := fixture(t, smallTrace)
	if _, err := simulateTo(t, prof, tr, out); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, out); len(l) > 0 {
		t.Errorf("the next run left %v", l)
	}
	if !exists(filepath.Join(out, "summary.json")) {
		t.Error("the next run wrote no summary")
	}
}
