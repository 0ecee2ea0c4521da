package bench

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/internal/golden"
	"github.com/sharebench/sharebench/internal/outdir"
)

// runSmoke runs the smoke plan into dir with jobs parallel runs and aggregates it.
func runSmoke(t *testing.T, env Env, dir string, jobs int) {
	t.Helper()
	// As "sharebench reproduce" does: the output root carries the marker of a reproduction.
	if _, err := outdir.Prepare(dir, outdir.Options{Kind: outdir.Reproduce}); err != nil {
		t.Fatal(err)
	}
	plan := Plan(LabelSmoke)
	outcomes, err := Sweep(context.Background(), NewInputs(env), plan, dir, SweepOptions{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outcomes {
		if o.Err != nil {
			t.Errorf("run %s failed: %v", o.Run.ID, o.Err)
		}
	}
	failures, err := Aggregate(env, dir, plan, AggregateOptions{Label: LabelSmoke, Whole: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(failures) > 0 {
		t.Fatalf("failures: %v", failures)
	}
}

// TestSmokeGolden runs the smoke experiments into a temporary directory and requires every
// output file (run directories, tables in Markdown, CSV and LaTeX, SVG figures) to equal the
// committed goldens in results/smoke/ byte for byte; -update rewrites them. It runs the plan a
// second time, sequentially, and requires identical bytes again.
func TestSmokeGolden(t *testing.T) {
	env := testEnv(t)
	first := filepath.Join(t.TempDir(), "smoke")
	runSmoke(t, env, first, runtime.GOMAXPROCS(0))
	want := filepath.Join(env.Root, "results", "smoke")
	if golden.Updating() {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(want, os.DirFS(first)); err != nil {
			t.Fatal(err)
		}
	}
	compareTrees(t, want, first)
	second := filepath.Join(t.TempDir(), "smoke")
	runSmoke(t, env, second, 1)
	compareTrees(t, first, second)
}

// compareTrees requires the two directory trees to hold the same files with the same bytes.
func compareTrees(t *testing.T, want, got string) {
	t.Helper()
	wf, err := treeFiles(want)
	if err != nil {
		t.Fatal(err)
	}
	gf, err := treeFiles(got)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, f := range wf {
		if _, ok := slices.BinarySearch(gf, f); !ok {
			report("%s: missing from %s", f, got)
		}
	}
	for _, f := range gf {
		if _, ok := slices.BinarySearch(wf, f); !ok {
			report("%s: not in %s (run go test ./bench -run TestSmokeGolden -update if intended)", f, want)
			continue
		}
		a, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			report("%s differs: %s", f, firstDiff(a, b))
		}
	}
	if bad > 10 {
		t.Errorf("... %d differences in all; run go test ./bench -run TestSmokeGolden -update if the change is intended", bad)
	}
}

// treeFiles lists the regular files below root, relative and sorted.
func treeFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	slices.Sort(files)
	return files, err
}

// firstDiff describes the first differing line of two texts.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: want %.120q, got %.120q", i+1, x, y)
		}
	}
	return "same lines, different bytes"
}
