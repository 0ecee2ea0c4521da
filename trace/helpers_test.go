package trace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// dataDir returns the shared data directory (the one holding traces/): $SHAREBENCH_DATA if
// set, else ../shared/data relative to the module root. It skips the test when the directory
// is absent, since the authors' traces are not part of the repository.
func dataDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("SHAREBENCH_DATA"); d != "" {
		if _, err := os.Stat(d); err != nil {
			tb.Fatalf("SHAREBENCH_DATA: %v", err)
		}
		return d
	}
	d := filepath.Join("..", "..", "shared", "data") // this package sits one level below the module root
	if _, err := os.Stat(d); err != nil {
		tb.Skipf("shared data directory absent (%v); set SHAREBENCH_DATA to run", err)
	}
	return d
}

// dataFile returns the path of a file under the data directory's traces/: the copy shipped in
// the repository's data/ when there is one, else the shared data directory's; it skips the
// test when the file is absent.
func dataFile(tb testing.TB, rel string) string {
	tb.Helper()
	if os.Getenv("SHAREBENCH_DATA") == "" {
		if p := filepath.Join("..", "data", "traces", filepath.FromSlash(rel)); fileExists(p) {
			return p
		}
	}
	p := filepath.Join(dataDir(tb), "traces", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("%s absent: %v", rel, err)
	}
	return p
}

// diffJobs returns the difference between two job lists (empty if equal). With roundTrip it
// ignores what the canonical format does not carry: Job.Line and Job.Stages. Equal lists are
// recognised without cmp, which is slow on 10^5 jobs; stages are compared by value.
func diffJobs(want, got []Job, roundTrip bool) string {
	eq := func(a, b Job) bool {
		if roundTrip {
			a.Line, b.Line = 0, 0
			a.Stages, b.Stages = nil, nil
		}
		if (a.Stages == nil) != (b.Stages == nil) || a.Stages != nil && *a.Stages != *b.Stages {
			return false
		}
		a.Stages, b.Stages = nil, nil
		return a == b
	}
	if slices.EqualFunc(want, got, eq) {
		return ""
	}
	var opts []cmp.Option
	if roundTrip {
		opts = append(opts, cmpopts.IgnoreFields(Job{}, "Line", "Stages"))
	}
	return cmp.Diff(want, got, opts...)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
