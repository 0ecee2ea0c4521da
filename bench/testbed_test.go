package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var updateTraces = flag.Bool("update-traces", false, "rewrite bench/traces/testbed61.csv from Muri's trace in the data directory")

// testEnv returns the environment of the tests.
func testEnv(t *testing.T) Env {
	t.Helper()
	env, err := FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// needData skips the test when the public data directory is absent.
func needData(t *testing.T, env Env) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(env.Data, "traces")); err != nil {
		t.Skipf("public data directory not found: %v (set %s)", err, DataEnv)
	}
}

// TestTestbedTraceRebuild rebuilds bench/traces/testbed61.csv from Muri's Apache-2.0 trace and
// requires the shipped file to be byte-identical (-update-traces rewrites it).
func TestTestbedTraceRebuild(t *testing.T) {
	env := testEnv(t)
	needData(t, env)
	src, err := env.Path(TraceMuri400)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Testbed().Rebuild(f, filepath.Base(src))
	if err != nil {
		t.Fatal(err)
	}
	shipped := filepath.Join(env.Root, filepath.FromSlash(TraceTestbed61))
	if *updateTraces {
		if err := os.WriteFile(shipped, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the rebuild of %s; run go test ./bench -run TestTestbedTraceRebuild -update-traces", TraceTestbed61, TraceMuri400)
	}
}

// TestTestbedTraceVsAuthors compares the rebuilt trace with the authors' file (read, never
// shipped) and pins the differences that bench/traces/README.md reports.
func TestTestbedTraceVsAuthors(t *testing.T) {
	env := testEnv(t)
	needData(t, env)
	authorsPath, err := env.Path("data:traces/sjf-bsbf-physical/trace_data_new_32.csv")
	if err != nil {
		t.Fatal(err)
	}
	authors, err := os.ReadFile(authorsPath)
	if err != nil {
		t.Skipf("authors' trace absent: %v", err)
	}
	ours, err := os.ReadFile(filepath.Join(env.Root, filepath.FromSlash(TraceTestbed61)))
	if err != nil {
		t.Fatal(err)
	}
	diffs, onlyOurs, onlyAuthors, err := CompareMuri(bytes.NewReader(ours), bytes.NewReader(authors))
	if err != nil {
		t.Fatal(err)
	}
	if len(onlyOurs) > 0 || len(onlyAuthors) > 0 {
		t.Fatalf("job ids differ: only ours %v, only the authors' %v", onlyOurs, onlyAuthors)
	}
	want := map[string][]int{
		"num_gpu": {114, 281},
		"iterations": {3, 35, 47, 48, 49, 51, 54, 79, 81, 84, 87, 102, 112, 114, 160, 161, 242, 243, 254, 256,
			257, 259, 260, 261, 262, 265, 276, 281, 287, 288, 296, 299, 300, 302, 306, 310, 311, 324, 326,
			328, 356, 357, 358, 359, 360, 362, 363, 374, 377},
	}
	for _, d := range diffs {
		t.Logf("%-16s %2d rows differ %v", d.Column, d.Differ, d.IDs)
		if !slices.Equal(d.IDs, want[d.Column]) {
			t.Errorf("column %s: rows %v differ, want %v (update bench/traces/README.md if this is intended)", d.Column, d.IDs, want[d.Column])
		}
	}
}
