package profile

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataDir returns the directory of the public data sets (shared/data), from SHAREBENCH_DATA or
// ../shared/data or shared/data relative to the module root, or skips the test.
func dataDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SHAREBENCH_DATA"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "profiles")); err != nil {
			t.Fatalf("SHAREBENCH_DATA=%s has no profiles/ directory", d)
		}
		return d
	}
	for _, d := range []string{"../../shared/data", "../shared/data"} {
		if _, err := os.Stat(filepath.Join(d, "profiles")); err == nil {
			return d
		}
	}
	t.Skip("public data sets not found (../shared/data relative to the module root); set SHAREBENCH_DATA to run this test")
	return ""
}

// dataFile returns a file under the data directory's profiles/, or skips when it is absent.
func dataFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(dataDir(t), "profiles", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not found: %v", p, err)
	}
	return p
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// approx reports whether got is within a relative 1e-9 of want.
func approx(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func wantIter(t *testing.T, tb *Table, c Config, gpus int, want float64) {
	t.Helper()
	s, ok := tb.Solo(c)
	if !ok {
		t.Fatalf("%s: no config", c)
	}
	got, ok := s.IterS[gpus]
	if !ok {
		t.Fatalf("%s: no iter_s on %d GPUs (have %s)", c, gpus, gpuCounts(s.IterS))
	}
	if !approx(got, want) {
		t.Errorf("%s on %d GPUs: iter_s = %.12g, want %.12g", c, gpus, got, want)
	}
}

func wantXi(t *testing.T, tb *Table, a, b Config, gpus int, m Mode, want float64) {
	t.Helper()
	for _, p := range tb.Pairs {
		if p.A == a && p.B == b && p.GPUs == gpus && p.Mode == m {
			if !approx(p.Xi, want) {
				t.Errorf("xi(%s | %s, %d GPUs, %s) = %.12g, want %.12g", a, b, gpus, m, p.Xi, want)
			}
			return
		}
	}
	t.Errorf("no pair %s | %s on %d GPUs (%s)", a, b, gpus, m)
}

func noPair(t *testing.T, tb *Table, a, b Config) {
	t.Helper()
	for _, p := range tb.Pairs {
		if p.A == a && p.B == b {
			t.Errorf("unexpected pair %s | %s on %d GPUs: xi %v", a, b, p.GPUs, p.Xi)
		}
	}
}

func hasNote(tb *Table, substr string) bool {
	for _, n := range tb.Notes {
		if strings.Contains(n, substr) {
			return true
		}
	}
	return false
}

// checkTable asserts the properties every imported table must have: it normalizes, writes,
// loads back to identical bytes, and a second write is identical.
func checkTable(t testing.TB, tb *Table) []byte {
	t.Helper()
	if err := tb.Normalize(); err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	var a bytes.Buffer
	if err := tb.Write(&a); err != nil {
		t.Fatalf("Write: %v", err)
	}
	back, err := Load(bytes.NewReader(a.Bytes()), "roundtrip.json")
	if err != nil {
		t.Fatalf("Load after Write: %v", err)
	}
	var b bytes.Buffer
	if err := back.Write(&b); err != nil {
		t.Fatalf("Write after Load: %v", err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("Write→Load→Write changed the bytes")
	}
	return a.Bytes()
}

// wantErr asserts err is non-nil and contains every substring.
func wantErr(t *testing.T, err error, substrs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got nil", substrs)
	}
	for _, s := range substrs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}
