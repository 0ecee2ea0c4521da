package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/internal/outdir"
)

// simulateTo runs a small simulation into out with extra flags.
func simulateTo(t *testing.T, prof, tr, out string, extra ...string) (string, error) {
	t.Helper()
	args := append([]string{"simulate", "--trace", tr, "--cluster", "1x4", "--policy", "sjf", "--profile", prof, "--out", out}, extra...)
	stdout, _, err := cli(t, args...)
	return stdout, err
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestSimulateOutSafety(t *testing.T) {
	dir, prof, tr := fixture(t, smallTrace)

	t.Run("empty directory", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := simulateTo(t, prof, tr, out); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, outdir.Marker))
		if err != nil || string(b) != string(outdir.MarkerContent(outdir.Run)) {
			t.Errorf("marker %q, %v", b, err)
		}
		if info, err := os.Stat(out); err != nil || info.Mode().Perm()&0o055 == 0 {
			t.Errorf("run directory mode %v, %v: want 0755 (less the umask)", info.Mode(), err)
		}
	})

	t.Run("own run directory is replaced", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		if _, err := simulateTo(t, prof, tr, out); err != nil {
			t.Fatal(err)
		}
		if !exists(filepath.Join(out, "decisions.jsonl")) {
			t.Fatal("no decisions.jsonl")
		}
		if _, err := simulateTo(t, prof, tr, out, "--no-decisions"); err != nil {
			t.Fatal(err)
		}
		if exists(filepath.Join(out, "decisions.jsonl")) {
			t.Error("the old run's decisions.jsonl survived: the directory was not replaced")
		}
		if !exists(filepath.Join(out, outdir.Marker)) || !exists(filepath.Join(out, "summary.json")) {
			t.Error("replaced run directory lacks its marker or summary.json")
		}
	})

	t.Run("legacy run directory without marker", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		if _, err := simulateTo(t, prof, tr, out); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(out, outdir.Marker)); err != nil {
			t.Fatal(err)
		}
		if _, err := simulateTo(t, prof, tr, out); err != nil {
			t.Errorf("a run directory written before markers was refused: %v", err)
		}
	})

	t.Run("foreign directory refused, then forced", func(t *testing.T) {
		out := t.TempDir()
		mine := filepath.Join(out, "thesis.tex")
		if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := simulateTo(t, prof, tr, out)
		if err == nil || !strings.Contains(err.Error(), "--out "+out+": refusing to write into a non-empty directory that sharebench did not write") ||
			!strings.Contains(err.Error(), "--force") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("err = %v", err)
		}
		if exists(filepath.Join(out, "summary.json")) {
			t.Fatal("wrote into the refused directory")
		}
		if _, err := simulateTo(t, prof, tr, out, "--force"); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(mine); err != nil || string(b) != "mine" {
			t.Errorf("--force lost the user's file: %q, %v", b, err)
		}
		if !exists(filepath.Join(out, "summary.json")) || exists(filepath.Join(out, outdir.Marker)) {
			t.Error("--force: want the run's files and no marker (the directory is still not sharebench's)")
		}
		entries, _ := os.ReadDir(out)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("temporary directory left behind: %s", e.Name())
			}
		}
		// Still foreign: refused again without --force.
		if _, err := simulateTo(t, prof, tr, out); err == nil {
			t.Error("a forced directory became sharebench's")
		}
	})

	t.Run("input's directory refused even with --force", func(t *testing.T) {
		for _, force := range [][]string{nil, {"--force"}} {
			_, err := simulateTo(t, prof, tr, dir, force...)
			if err == nil || !strings.Contains(err.Error(), "holds the input") || !strings.Contains(err.Error(), "not even with --force") {
				t.Errorf("force %v: err = %v", force, err)
			}
		}
		if !exists(tr) || !exists(prof) {
			t.Fatal("an input was removed")
		}
	})

	t.Run("a file", func(t *testing.T) {
		if _, err := simulateTo(t, prof, tr, tr+"-not-dir", "--force"); err != nil {
			t.Fatal(err) // a new path next to the input is fine
		}
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o644)
		if _, err := simulateTo(t, prof, tr, f, "--force"); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestReproduceOutSafety(t *testing.T) {
	env, err := bench.FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	// The committed outputs are recognised as reproductions, so "make reproduce" and "make smoke"
	// rewrite them without --force.
	for _, d := range []string{"paper", "smoke"} {
		st, err := outdir.Check(filepath.Join(env.Root, "results", d), outdir.Options{Kind: outdir.Reproduce, Inputs: reproduceInputs(env, bench.Plan(d))})
		if err != nil || st != outdir.Own {
			t.Errorf("results/%s: %v, %v; want it accepted as a reproduction", d, st, err)
		}
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.md"), []byte("mine"), 0o644)
	for _, args := range [][]string{
		{"--out", foreign},
		{"--out", foreign, "--figures-only"},
	} {
		_, _, err := cli(t, append([]string{"reproduce", "--label", "smoke"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "sharebench did not write") {
			t.Errorf("%v: err = %v", args, err)
		}
	}
	// The data directory and the module root hold inputs: never, not even with --force.
	for _, out := range []string{env.Data, env.Root, filepath.Join(env.Root, "..")} {
		_, _, err := cli(t, "reproduce", "--label", "smoke", "--out", out, "--force")
		if err == nil || !strings.Contains(err.Error(), "holds the input") {
			t.Errorf("--out %s --force: err = %v", out, err)
		}
	}
	// --run writes one run directory; a foreign directory in its place is refused.
	plan := bench.Plan(bench.LabelSmoke)
	root := t.TempDir()
	runDir := plan[0].Dir(root)
	os.MkdirAll(runDir, 0o755)
	os.WriteFile(filepath.Join(runDir, "mine.txt"), nil, 0o644)
	if _, _, err := cli(t, "reproduce", "--label", "smoke", "--out", root, "--run", plan[0].ID); err == nil || !strings.Contains(err.Error(), runDir) {
		t.Errorf("--run into a foreign run directory: %v", err)
	}
	if !exists(filepath.Join(runDir, "mine.txt")) {
		t.Error("the foreign file was removed")
	}
	// Into a new root, --run marks the root, so that the whole reproduction accepts it later.
	fresh := filepath.Join(t.TempDir(), "out")
	if _, _, err := cli(t, "reproduce", "--label", "smoke", "--out", fresh, "--run", plan[0].ID); err != nil {
		t.Fatal(err)
	}
	if kind, err := outdir.Recognize(fresh); err != nil || kind != outdir.Reproduce {
		t.Errorf("root after --run: %q, %v", kind, err)
	}
	if !exists(filepath.Join(plan[0].Dir(fresh), "summary.json")) {
		t.Error("--run wrote no run directory")
	}
}

func TestProfileRunOutSafety(t *testing.T) {
	env, err := bench.FindEnv()
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(env.Root, "bench", "campaigns", "fake-example.yaml")
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.md"), []byte("mine"), 0o644)
	_, _, err = cli(t, "profile", "run", "--spec", spec, "--backend", "fake", "--out", foreign)
	if err == nil || !strings.Contains(err.Error(), "sharebench did not write") || !strings.Contains(err.Error(), "--force-out") {
		t.Errorf("foreign: err = %v", err)
	}
	_, _, err = cli(t, "profile", "run", "--spec", spec, "--backend", "fake", "--out", filepath.Dir(spec), "--force-out")
	if err == nil || !strings.Contains(err.Error(), "holds the input") {
		t.Errorf("the campaign's directory: err = %v", err)
	}
}
