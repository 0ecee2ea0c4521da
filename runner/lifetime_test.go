//go:build linux

package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitUntil polls cond (every 20 ms) until it holds or limit passes; the limit is generous
// because the test waits on a state, not on a duration.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// TestKill9RunnerStopsItsWorkloads kills a runner with kill -9 while its workload hangs and a
// grandchild of the workload has left the process group (setsid): the workload dies with the
// runner (Pdeathsig); the escaped grandchild survives that, and the resumed campaign finds
// and stops it before it measures anything.
func TestKill9RunnerStopsItsWorkloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	pidFile := filepath.Join(dir, "escaped.pid")
	spec := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(spec, []byte(`
name: kill9
backend: fake
solo_only: true
repeats: 1
max_repeats: 1
models: [{name: a, batches: [8], args: [--inject, escape@hang]}]
warmup: {steps: 1, seconds: 0}
timeouts: {ready: 10m, stall: 10m, grace: 1s}
telemetry: none
fake: {default_step_ms: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	runner := exec.Command(os.Args[0])
	runner.Env = append(os.Environ(), envTestMode+"=run-campaign", "SHAREBENCH_TEST_CAMPAIGN="+spec, "SHAREBENCH_TEST_OUT="+out,
		EnvFakePIDFile+"="+pidFile)
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	token := CampaignToken(out) + "/"
	var workload, escaped int
	waitUntil(t, 2*time.Minute, "the workload and its escaped grandchild", func() bool {
		escaped = readPID(t, pidFile)
		for _, p := range tokenProcs(token) {
			if p != escaped {
				workload = p
			}
		}
		return escaped > 0 && workload > 0
	})
	if err := runner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	runner.Wait()
	waitUntil(t, time.Minute, "the hung workload to die with its runner", func() bool { return !alive(workload) })
	if !alive(escaped) {
		t.Fatalf("the escaped grandchild %d died too; the test cannot check the resume", escaped)
	}

	c := mustParse(t, "name: kill9\nbackend: fake\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}]\nwarmup: {steps: 1, seconds: 0}\nwindow: {min_steps: 5, min_seconds: 0, floor_steps: 5}\ntelemetry: none\nfake: {default_step_ms: 2}\n")
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stale != 1 || alive(escaped) {
		t.Errorf("resume: %d stale processes stopped, escaped grandchild alive: %v", sum.Stale, alive(escaped))
	}
	if sum.Cells.OK != 1 {
		t.Errorf("resumed campaign: %+v", sum.Cells)
	}
}

// TestEscapedProcessIsKilledAfterItsRun: a grandchild that leaves the process group (setsid)
// is found by its environment token when its run ends, killed, and noted.
func TestEscapedProcessIsKilledAfterItsRun(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "escaped.pid")
	c, _ := fakeCampaign(t, "name: escape\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8], args: [--inject, escape]}]\nwarmup: {steps: 1, seconds: 0}\nwindow: {min_steps: 5, min_seconds: 0, floor_steps: 5}\ntelemetry: none\nfake: {default_step_ms: 2}\n")
	b := fakeBackend(c.Fake)
	b.Env[EnvFakePIDFile] = pidFile
	sum, err := Run(context.Background(), c, RunOptions{OutDir: t.TempDir(), Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, pidFile)
	if pid == 0 || alive(pid) {
		t.Fatalf("escaped grandchild %d alive after the run (summary %+v)", pid, sum)
	}
}

// TestRunNoteForEscapes checks the run's note about escaped processes.
func TestRunNoteForEscapes(t *testing.T) {
	t.Parallel()
	c, _ := fakeCampaign(t, "name: escape\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8], args: [--inject, escape]}]\nwarmup: {steps: 1, seconds: 0}\nwindow: {min_steps: 5, min_seconds: 0, floor_steps: 5}\ntelemetry: none\nfake: {default_step_ms: 2}\n")
	res, err := RunCell(context.Background(), c, 0, fakeBackend(c.Fake), CellOptions{OutDir: t.TempDir()})
	if err != nil || res.Status != StatusOK {
		t.Fatalf("%v %s %s", err, res.Status, res.Reason)
	}
	if !slices.ContainsFunc(res.Runs[0].Notes, func(n string) bool { return strings.Contains(n, "left the run's process group were killed") }) {
		t.Errorf("notes %q", res.Runs[0].Notes)
	}
}

// TestRawWriteErrorFailsTheCell: a raw file that cannot be written (its path leads to
// /dev/full, which fails every write with ENOSPC) fails the cell loudly instead of leaving it
// ok with an empty raw file.
func TestRawWriteErrorFailsTheCell(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	c, _ := fakeCampaign(t, "name: full\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}]\nwarmup: {steps: 1, seconds: 0}\nwindow: {min_steps: 5, min_seconds: 0, floor_steps: 5}\ntelemetry: none\nfake: {default_step_ms: 2}\n")
	out := t.TempDir()
	cell := c.Cells()[0]
	cellDir := filepath.Join(out, "cells", cell.Dir())
	if err := os.MkdirAll(cellDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(cellDir, "r0-solo-A.events.jsonl")); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	if sum.Cells.Failed != 1 || len(recs) != 1 || !strings.Contains(recs[0].Reason, "no space left on device") {
		t.Fatalf("summary %+v, records %+v", sum.Cells, recs)
	}
}

// TestRawWriteErrorOnFullTmpfs fills a small tmpfs with the raw files (root only): the cell
// fails with ENOSPC, nothing is recorded ok.
func TestRawWriteErrorOnFullTmpfs(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	out := t.TempDir()
	cells := filepath.Join(out, "cells")
	if err := os.MkdirAll(cells, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", cells, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer syscall.Unmount(cells, syscall.MNT_DETACH)
	c, _ := fakeCampaign(t, "name: tmpfs\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}]\nwarmup: {steps: 1, seconds: 0}\nwindow: {min_steps: 2000, min_seconds: 1000, floor_steps: 5, max_seconds: 60}\ntelemetry: none\nfake: {default_step_ms: 0.01, jitter: -1}\n")
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	if sum.Cells.OK != 0 || len(recs) != 1 || !strings.Contains(recs[0].Reason, "no space left on device") {
		t.Fatalf("summary %+v, records %+v", sum.Cells, recs)
	}
}

// TestJournalSymlinkRefused: the journal is never written or read through a symbolic link.
func TestJournalSymlinkRefused(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(out, JournalFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJournal(filepath.Join(out, JournalFile)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("OpenJournal through a link: %v", err)
	}
	if _, _, err := ReadJournal(filepath.Join(out, JournalFile)); err == nil {
		t.Error("ReadJournal followed a link")
	}
	c, _ := fakeCampaign(t, "name: link\nsolo_only: true\nrepeats: 1\nmax_repeats: 1\nmodels: [{name: a, batches: [8]}]\ntelemetry: none\n")
	if _, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: fakeBackend(c.Fake)}); err == nil {
		t.Error("Run wrote through a linked journal")
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Errorf("the link's target was written: %q", b)
	}
}

// TestStatusAfterKill9ShowsPendingCells kills a runner with kill -9 while it measures the
// fourth of nine cells, before it has written manifest.json: "profile status" must still know
// the campaign's plan and list the five cells that never started as pending, not report a
// campaign of the three cells the journal holds.
func TestStatusAfterKill9ShowsPendingCells(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	spec := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(spec, []byte(`
name: plan9
backend: fake
solo_only: true
repeats: 1
max_repeats: 1
models:
  - {name: a, batches: [8]}
  - {name: b, batches: [8]}
  - {name: c, batches: [8]}
  - {name: d, batches: [8], args: [--inject, hang]}
  - {name: e, batches: [8]}
  - {name: f, batches: [8]}
  - {name: g, batches: [8]}
  - {name: h, batches: [8]}
  - {name: i, batches: [8]}
warmup: {steps: 1, seconds: 0}
window: {min_steps: 5, min_seconds: 0, floor_steps: 5}
timeouts: {ready: 10m, stall: 10m, grace: 1s}
telemetry: none
fake: {default_step_ms: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	runner := exec.Command(os.Args[0])
	runner.Env = append(os.Environ(), envTestMode+"=run-campaign", "SHAREBENCH_TEST_CAMPAIGN="+spec, "SHAREBENCH_TEST_OUT="+out)
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	token := CampaignToken(out) + "/"
	waitUntil(t, 2*time.Minute, "three cells in the journal and the fourth one's hung workload", func() bool {
		recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
		return len(recs) == 3 && len(tokenProcs(token)) > 0
	})
	if err := runner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	runner.Wait()
	waitUntil(t, time.Minute, "the hung workload to die with its runner", func() bool { return len(tokenProcs(token)) == 0 })
	if _, err := os.Stat(filepath.Join(out, ManifestFile)); err == nil {
		t.Fatal("manifest.json exists: the test no longer kills the runner before it is written")
	}

	rep, err := CampaignStatus(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := StatusCounts{Total: 9, OK: 3, Started: 1, Pending: 5}
	if rep.Counts != want || rep.Campaign != "plan9" {
		t.Errorf("status of campaign %q: %+v, want %+v", rep.Campaign, rep.Counts, want)
	}
	if len(rep.Cells) == 9 && (rep.Cells[3].Label != "d/8/8" || rep.Cells[3].Status != CellStarted || rep.Cells[8].Status != CellPending) {
		t.Errorf("cells 3 and 8: %+v, %+v", rep.Cells[3], rep.Cells[8])
	}
}
