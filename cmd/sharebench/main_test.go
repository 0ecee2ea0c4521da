package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/profile"
)

// cli runs the command line in-process and returns stdout, stderr and the error.
func cli(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// fixture writes a small test profile (a hand-made fixture, not a measurement) and a trace.
func fixture(t *testing.T, traceCSV string) (dir, prof, tr string) {
	t.Helper()
	dir = t.TempDir()
	tab := &profile.Table{GPU: "test GPU", GPUMemBytes: 16 * cluster.GiB, Source: "test",
		Models: []profile.Model{
			{Name: "a", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 0.5}, MemBytes: 4 * cluster.GiB}}},
			{Name: "b", DefaultBatch: 32, Configs: []profile.Solo{{Batch: 32, SubBatch: 32, IterS: profile.GPUMap{1: 1}, MemBytes: 4 * cluster.GiB}}},
		}}
	for _, p := range [][2]string{{"a", "a"}, {"a", "b"}, {"b", "a"}, {"b", "b"}} {
		tab.Pairs = append(tab.Pairs, profile.Pair{A: profile.Config{Model: p[0], Batch: 32, SubBatch: 32},
			B: profile.Config{Model: p[1], Batch: 32, SubBatch: 32}, GPUs: 1, Mode: profile.Timeslice, Xi: 1.2})
	}
	prof = filepath.Join(dir, "profile.json")
	if err := tab.WriteFile(prof); err != nil {
		t.Fatal(err)
	}
	tr = filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(tr, []byte(traceCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, prof, tr
}

const smallTrace = `job_id,submit_s,num_gpu,model,batch_size,iterations
1,0,1,a,32,1000
2,10,2,b,32,500
3,20,1,b,32,100
4,25.5,4,a,32,50
`

func TestHelpAndUnknown(t *testing.T) {
	out, _, err := cli(t, "help")
	if err != nil || !strings.Contains(out, "simulate") || !strings.Contains(out, "reproduce") {
		t.Errorf("help: %v\n%s", err, out)
	}
	if _, _, err := cli(t, "frobnicate"); err == nil || err.Error() != `unknown command "frobnicate" for "sharebench"; see 'sharebench --help'` {
		t.Errorf("unknown command: %v", err)
	}
	if _, _, err := cli(t); err == nil {
		t.Error("no command: no error")
	}
	if _, _, err := cli(t, "simulate", "-h"); err != nil {
		t.Errorf("simulate -h: %v", err)
	}
}

func TestPoliciesListsEveryKey(t *testing.T) {
	out, _, err := cli(t, "policies")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"fifo", "sjf", "tiresias", "sjf-ffs", "sjf-bsbf", "sjf-bsbf-no-preempt", "tiresias-authors"} {
		if !strings.Contains(out, k) {
			t.Errorf("policies output lacks %s", k)
		}
	}
}

func TestSimulateWritesRunDirectory(t *testing.T) {
	dir, prof, tr := fixture(t, smallTrace)
	outDir := filepath.Join(dir, "run")
	args := []string{"simulate", "--trace", tr, "--cluster", "1x4", "--policy", "sjf-bsbf", "--profile", prof, "--out", outDir}
	stdout, _, err := cli(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "sjf-bsbf on trace.csv (4 jobs, 1x4, 4 GPUs)") {
		t.Errorf("stdout: %s", stdout)
	}
	read := func() map[string][]byte {
		m := map[string][]byte{}
		for _, f := range []string{"summary.json", "jobs.csv", "util.csv", "decisions.jsonl"} {
			b, err := os.ReadFile(filepath.Join(outDir, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = b
		}
		return m
	}
	first := read()
	if _, _, err := cli(t, args...); err != nil {
		t.Fatal(err)
	}
	for f, b := range read() {
		if !bytes.Equal(b, first[f]) {
			t.Errorf("%s differs between two identical runs", f)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary directory left behind: %s", e.Name())
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	dir, prof, _ := fixture(t, smallTrace)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	bad := write("bad.csv", "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,a,32,1000\n2,1o,1,a,32,5\n")
	unknown := write("unknown.csv", "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,zzz,32,1000\n")
	big := write("big.csv", "job_id,submit_s,num_gpu,model,batch_size,iterations\n1,0,1,a,32,1000\n2,0,8,a,32,10\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"positioned syntax error", []string{"--trace", bad}, "bad.csv:3: submit_s"},
		{"unknown model", []string{"--trace", unknown}, `unknown model "zzz" (known: a, b)`},
		{"oversized job", []string{"--trace", big}, "--drop-oversized"},
		{"unknown policy", []string{"--trace", big, "--policy", "nope"}, `unknown policy "nope"`},
		{"bad cluster", []string{"--trace", big, "--cluster", "4"}, "NODESxGPUS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			args := append([]string{"simulate", "--cluster", "1x4", "--policy", "fifo", "--profile", prof, "--out", out}, tc.args...)
			_, _, err := cli(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Errorf("output directory written despite the error")
			}
		})
	}
	// --drop-oversized turns the oversized job into a note.
	out := filepath.Join(dir, "dropped")
	stdout, _, err := cli(t, "simulate", "--trace", big, "--cluster", "1x4", "--policy", "fifo", "--profile", prof, "--out", out, "--drop-oversized")
	if err != nil || !strings.Contains(stdout, "1 jobs asked for more than the cluster's 4 GPUs and were dropped") {
		t.Errorf("drop-oversized: %v\n%s", err, stdout)
	}
}

func TestTraceConvertRoundTrip(t *testing.T) {
	dir, _, tr := fixture(t, smallTrace)
	out := filepath.Join(dir, "canonical.csv")
	if _, _, err := cli(t, "trace", "convert", "--in", tr, "--out", out); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "again.csv")
	if _, _, err := cli(t, "trace", "convert", "--in", out, "--out", out2); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) {
		t.Errorf("convert is not idempotent:\n%s\n%s", a, b)
	}
}

func TestConvertRefusesItsInput(t *testing.T) {
	_, _, tr := fixture(t, smallTrace)
	before, _ := os.ReadFile(tr)
	_, _, err := cli(t, "trace", "convert", "--in", tr, "--out", tr)
	if err == nil || !strings.Contains(err.Error(), "is the input") {
		t.Errorf("err = %v", err)
	}
	if after, _ := os.ReadFile(tr); !bytes.Equal(before, after) {
		t.Error("the input was rewritten")
	}
}
