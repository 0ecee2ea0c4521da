package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sharebench/sharebench/dispatch"
)

// The tests in this file run against a real single-node Slurm cluster on loopback (docs/cluster.md
// §10.3), started by .ci/slurm-up.sh and stopped by .ci/slurm-down.sh, and drive it through
// the sharebench command line, as a user would. They skip when slurm-wlm or munge is not
// installed, unless SHAREBENCH_REQUIRE_SLURM=1 (make slurm-smoke) makes that a failure.

// envRequireSlurm turns a missing Slurm installation into a test failure.
const envRequireSlurm = "SHAREBENCH_REQUIRE_SLURM"

// slurmCluster is a private cluster in dir, with two fake GPUs, 8 announced CPUs and
// MaxArraySize 4 (so campaigns of more than four cells are split into several arrays).
type slurmCluster struct {
	dir  string
	conf string
	env  []string
}

// sbinPath returns PATH with the system binary directories (slurmctld, slurmd and munged live
// in /usr/sbin, which a user's PATH may lack).
func sbinPath() string {
	p := os.Getenv("PATH")
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if !slices.Contains(filepath.SplitList(p), d) {
			p += string(filepath.ListSeparator) + d
		}
	}
	return p
}

// requireSlurm skips (or, under SHAREBENCH_REQUIRE_SLURM=1, fails) the test when the Slurm
// and munge programs are missing.
func requireSlurm(t *testing.T) {
	t.Helper()
	var missing []string
	for _, b := range []string{"bash", "awk", "sbatch", "squeue", "scontrol", "scancel", "sinfo", "slurmctld", "slurmd", "munged"} {
		found := false
		for _, d := range filepath.SplitList(sbinPath()) {
			if st, err := os.Stat(filepath.Join(d, b)); err == nil && !st.IsDir() {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("slurm-wlm and munge are not installed (missing: %s); apt-get install slurm-wlm munge", strings.Join(missing, ", "))
	if os.Getenv(envRequireSlurm) == "1" {
		t.Fatalf("%s=1 requires a Slurm installation, but %s", envRequireSlurm, msg)
	}
	t.Skipf("skipping the real-Slurm test: %s (make slurm-smoke requires it)", msg)
}

// freePort returns a TCP port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startSlurm starts the cluster and registers its teardown, which fails the test if any
// process mentioning the cluster's directory survives it.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	requireSlurm(t)
	dir, err := os.MkdirTemp("", "sharebench-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := &slurmCluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	sc.env = append(os.Environ(), "SLURM_CONF="+sc.conf, "PATH="+sbinPath())
	up := filepath.Join("..", ".ci", "slurm-up.sh")
	down := filepath.Join("..", ".ci", "slurm-down.sh")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "bash", down, dir)
		cmd.Env = sc.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("slurm-down.sh: %v\n%s", err, out)
		}
		if left := processesMentioning(dir); len(left) > 0 {
			t.Errorf("processes left behind after slurm-down.sh:\n%s", strings.Join(left, "\n"))
		} else {
			t.Logf("cluster stopped in %.1f s; no process mentions %s", time.Since(start).Seconds(), dir)
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("cluster files kept in %s", dir)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", up, dir)
	cmd.Env = append(slices.Clone(sc.env), "SLURM_GPUS=2", "SLURM_CPUS=8", "SLURM_MAX_ARRAY_SIZE=4",
		"SLURMCTLD_PORT="+strconv.Itoa(freePort(t)), "SLURMD_PORT="+strconv.Itoa(freePort(t)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("slurm-up.sh: %v\n%s", err, out)
	}
	t.Logf("single-node cluster up in %.1f s (%s)", time.Since(start).Seconds(), sc.conf)
	return sc
}

// processesMentioning lists live processes (not zombies, not this one) whose command line or
// environment contains s.
func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	self := strconv.Itoa(os.Getpid())
	for _, e := range ents {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err != nil || i < 0 || bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		if bytes.Contains(cmdline, []byte(s)) || bytes.Contains(environ, []byte(s)) {
			out = append(out, pid+" "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// slurmCommand runs a Slurm client command against the cluster.
func (sc *slurmCluster) slurmCommand(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = sc.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildSharebench builds the sharebench command into a temporary directory.
func buildSharebench(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sharebench")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sharebench")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sharebench: %v\n%s", err, out)
	}
	t.Logf("built sharebench in %.1f s", time.Since(start).Seconds())
	return bin
}

// sharebenchProc is a sharebench command running in the background.
type sharebenchProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

func (sc *slurmCluster) start(t *testing.T, bin string, args ...string) *sharebenchProc {
	t.Helper()
	p := &sharebenchProc{done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = sc.env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// failIfExited fails the test, with the command's output, if the command has already exited.
func (p *sharebenchProc) failIfExited(t *testing.T, when string) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		t.Fatalf("%s exited %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args, " "), when, err, &p.stdout, &p.stderr)
	default:
	}
}

// wait waits for the command to exit (failing the test after limit) and returns its error.
func (p *sharebenchProc) wait(t *testing.T, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(limit):
		p.cmd.Process.Kill()
		t.Fatalf("%s did not finish within %v\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args, " "), limit, &p.stdout, &p.stderr)
	}
	return nil
}

// run runs a sharebench command to completion.
func (sc *slurmCluster) run(t *testing.T, bin string, limit time.Duration, args ...string) (string, error) {
	t.Helper()
	p := sc.start(t, bin, args...)
	err := p.wait(t, limit)
	if err != nil {
		t.Logf("%s: %v\nstderr:\n%s", strings.Join(args, " "), err, &p.stderr)
	}
	return p.stdout.String(), err
}

// waitFor polls cond every 100 ms until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queueMonitor samples squeue while a campaign runs: the most tasks seen running at once, and
// whether a task ever waited for resources (GRES) while others ran.
type queueMonitor struct {
	mu            sync.Mutex
	maxRunning    int
	waitedForGRES bool
	stop          chan struct{}
	done          chan struct{}
}

func (sc *slurmCluster) monitor() *queueMonitor {
	m := &queueMonitor{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			cmd := exec.Command("squeue", "--noheader", "--array", "--format=%i|%T|%r")
			cmd.Env = sc.env
			if out, err := cmd.Output(); err == nil {
				running, waiting := 0, false
				for _, task := range dispatch.ParseSqueue(out) {
					switch {
					case task.State == "RUNNING":
						running++
					case task.State == "PENDING" && task.Reason == "Resources":
						waiting = true
					}
				}
				m.mu.Lock()
				m.maxRunning = max(m.maxRunning, running)
				m.waitedForGRES = m.waitedForGRES || (waiting && running > 0)
				m.mu.Unlock()
			}
			select {
			case <-m.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return m
}

func (m *queueMonitor) finish() (maxRunning int, waitedForGRES bool) {
	close(m.stop)
	<-m.done
	return m.maxRunning, m.waitedForGRES
}

// readState reads dispatch.json, nil while there is none.
func readState(t *testing.T, dir string) *DispatchState {
	t.Helper()
	s, err := ReadDispatchState(dir)
	if err != nil {
		return nil
	}
	return s
}

// maxOverlap returns the largest number of intervals that overlap at one instant.
func maxOverlap(rs []Result) int {
	type ev struct {
		t     time.Time
		delta int
	}
	var evs []ev
	for _, r := range rs {
		evs = append(evs, ev{r.Started, 1}, ev{r.Finished, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.delta - b.delta // ends before starts at the same instant
	})
	n, best := 0, 0
	for _, e := range evs {
		n += e.delta
		best = max(best, n)
	}
	return best
}

const slurmCampaignYAML = `name: slurm-cluster
backend: fake
repeats: 1
max_repeats: 1
warmup: {steps: 2, seconds: 0}
window: {min_steps: 10, min_seconds: 0, floor_steps: 3, trim: 1, max_seconds: 60}
timeouts: {grace: 1s}
telemetry: none
models:
  - {name: alpha, batches: [32]}
  - {name: beta, batches: [32]}
  - {name: crash, batches: [32], args: [--inject, crash@3]}
  - {name: hang, batches: [32], args: [--inject, hang]}
  - {name: broken, batches: [32]}
pairs: [[alpha, beta]]
fake: {default_step_ms: 100, jitter: -1}
slurm: {cpus_per_task: 1, max_running: 4, poll: 200ms, poll_max: 1s}
`

const slurmResumeYAML = `name: slurm-resume
backend: fake
repeats: 1
max_repeats: 1
solo_only: true
warmup: {steps: 2, seconds: 0}
window: {min_steps: 12, min_seconds: 0, floor_steps: 3, trim: 1, max_seconds: 60}
telemetry: none
models:
  - {name: m0, batches: [32]}
  - {name: m1, batches: [32]}
  - {name: m2, batches: [32]}
  - {name: m3, batches: [32]}
  - {name: m4, batches: [32]}
  - {name: m5, batches: [32]}
fake: {default_step_ms: 100, jitter: -1}
slurm: {cpus_per_task: 1, max_running: 2, poll: 200ms, poll_max: 1s}
`

// TestSlurmCluster runs campaigns and a simulation sweep through the Slurm backend of a real
// single-node cluster: job arrays split at MaxArraySize, GRES accounting (two fake GPUs, so
// at most two tasks at once), a cell that fails inside its task, a task whose sharebench
// fails (Slurm FAILED), a task killed by scancel (CANCELLED), an interrupted campaign that
// resumes without resubmitting completed cells, and a sweep whose merged outputs equal a
// local run's byte for byte.
func TestSlurmCluster(t *testing.T) {
	sc := startSlurm(t)
	bin := buildSharebench(t)
	t.Run("campaign", func(t *testing.T) { testSlurmCampaign(t, sc, bin) })
	t.Run("resume", func(t *testing.T) { testSlurmResume(t, sc, bin) })
	t.Run("sweep", func(t *testing.T) { testSlurmSweep(t, sc, bin) })
	if out := sc.slurmCommand(t, "squeue", "--noheader"); strings.TrimSpace(out) != "" {
		t.Errorf("jobs left in the queue:\n%s", out)
	}
}

func testSlurmCampaign(t *testing.T, sc *slurmCluster, bin string) {
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "campaign.yaml")
	if err := os.WriteFile(spec, []byte(slurmCampaignYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ParseCampaign([]byte(slurmCampaignYAML), "campaign.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells := c.Cells()
	const alpha, beta, crash, hang, broken, pair = 0, 1, 2, 3, 4, 5
	if len(cells) != 6 || cells[pair].Kind != KindPair || cells[broken].A.Model != "broken" {
		t.Fatalf("unexpected cells: %+v", cells)
	}
	out := filepath.Join(tmp, "out")
	// A file where the broken cell's raw-file directory goes: its task's sharebench cannot
	// create the directory and exits 1 without a result, a Slurm-level failure.
	if err := os.MkdirAll(filepath.Join(out, "cells"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "cells", cells[broken].Dir()), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mon := sc.monitor()
	start := time.Now()
	// --force-out: the planted file makes out a directory sharebench did not write.
	p := sc.start(t, bin, "profile", "run", "--spec", spec, "--backend", "slurm", "--out", out, "--force-out")
	var hangTask string
	waitFor(t, 60*time.Second, "the hanging cell's task to run", func() bool {
		p.failIfExited(t, "before the hanging cell's task ran")
		if s := readState(t, out); s != nil {
			for _, task := range s.Tasks {
				if task.Index == hang && task.State == "RUNNING" {
					hangTask = task.Task
					return true
				}
			}
		}
		return false
	})
	sc.slurmCommand(t, "scancel", hangTask)
	if err := p.wait(t, 90*time.Second); err != nil {
		t.Fatalf("profile run --backend slurm: %v\nstdout:\n%s\nstderr:\n%s", err, &p.stdout, &p.stderr)
	}
	maxRunning, waited := mon.finish()
	t.Logf("campaign of %d cells on Slurm in %.1f s; at most %d tasks ran at once", len(cells), time.Since(start).Seconds(), maxRunning)

	records, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	latest := Latest(records)
	if len(records) != len(cells) || len(latest) != len(cells) {
		t.Fatalf("journal has %d records of %d cells, want one per cell (%d)", len(records), len(latest), len(cells))
	}
	want := []struct {
		cell   int
		status Status
		reason string
	}{
		{alpha, StatusOK, ""},
		{beta, StatusOK, ""},
		{crash, StatusFailed, "exited during measurement"},             // the cell failed inside its task
		{hang, StatusFailed, "slurm: task " + hangTask + " CANCELLED"}, // scancel
		{broken, StatusFailed, "FAILED: sharebench exited without a result (exit code 1:0"},
		{pair, StatusOK, ""},
	}
	for _, w := range want {
		r := latest[cells[w.cell].ID]
		if r.Status != w.status || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("cell %s: status %s, reason %q; want %s with %q", cells[w.cell].Label, r.Status, r.Reason, w.status, w.reason)
		}
	}
	if tail := latest[cells[broken].ID].StderrTail; !strings.Contains(tail, "not a directory") {
		t.Errorf("broken cell: stderr tail %q does not carry sharebench's error", tail)
	}
	// GRES: two fake GPUs, one per task, four tasks allowed by the throttle.
	if maxRunning > 2 {
		t.Errorf("squeue showed %d tasks running at once with 2 GPUs", maxRunning)
	}
	if !waited {
		t.Errorf("no task was ever seen pending for resources while others ran")
	}
	var measured []Result
	for _, r := range latest {
		if r.Backend == BackendFake && len(r.Runs) > 0 {
			measured = append(measured, r)
		}
	}
	if n := maxOverlap(measured); n > 2 {
		t.Errorf("%d cells measured at the same time with 2 GPUs", n)
	}
	// Arrays split at MaxArraySize 4; every task output starts with its task record.
	st := readState(t, out)
	if st == nil || len(st.Jobs) != 2 || st.Active {
		t.Fatalf("dispatch record: %+v; want two finished job arrays", st)
	}
	outs, _ := filepath.Glob(filepath.Join(out, SlurmDir, "*.out"))
	if len(outs) != len(cells) {
		t.Errorf("%d task outputs, want %d", len(outs), len(cells))
	}
	for _, f := range outs {
		data, _ := os.ReadFile(f)
		rec, ok := readTaskRecord(data)
		if !ok || rec.Hostname == "" || rec.JobID == "" || rec.Engine != EngineSlurm {
			t.Errorf("%s: no task record: %q", f, firstLine(data))
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".out"); rec.ArrayJobID+"_"+rec.ArrayTaskID != want {
			t.Errorf("%s: task record names %s_%s", f, rec.ArrayJobID, rec.ArrayTaskID)
		}
		if r, ok := lastResult(data, ""); ok && r.Cell.Index != rec.CellIndex {
			t.Errorf("%s: task ran cell %d but recorded index %d", f, r.Cell.Index, rec.CellIndex)
		}
	}
	// profile status reads the same directory.
	js, err := sc.run(t, bin, 30*time.Second, "profile", "status", out, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep CampaignStatusReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Counts.OK != 3 || rep.Counts.Failed != 3 || rep.Engine != EngineSlurm || rep.EngineActive {
		t.Errorf("profile status: %+v", rep.Counts)
	}
	table, err := sc.run(t, bin, 30*time.Second, "profile", "status", out)
	if err != nil || !strings.Contains(table, "CANCELLED") || !strings.Contains(table, "slurm "+hangTask) {
		t.Errorf("profile status table:\n%s", table)
	}
	for _, f := range []string{ProfileFile, CellsFile, ManifestFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func testSlurmResume(t *testing.T, sc *slurmCluster, bin string) {
	tmp := t.TempDir()
	spec := filepath.Join(tmp, "campaign.yaml")
	if err := os.WriteFile(spec, []byte(slurmResumeYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ParseCampaign([]byte(slurmResumeYAML), "campaign.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells := c.Cells()
	out := filepath.Join(tmp, "out")
	args := []string{"profile", "run", "--spec", spec, "--backend", "slurm", "--out", out}

	// First run: interrupted (SIGINT, as Ctrl-C) once two cells are in the journal.
	p := sc.start(t, bin, args...)
	waitFor(t, 60*time.Second, "two cells in the journal", func() bool {
		rs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
		return len(rs) >= 2
	})
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = p.wait(t, 60*time.Second)
	if err == nil || !strings.Contains(p.stderr.String(), "interrupted") {
		t.Fatalf("interrupted run: err %v, want an interruption\nstderr:\n%s", err, &p.stderr)
	}
	st1 := readState(t, out)
	if st1 == nil {
		t.Fatal("no dispatch record after the first run")
	}
	waitFor(t, 20*time.Second, "the interrupted run's tasks to leave the queue (scancel)", func() bool {
		cmd := exec.Command("squeue", "--noheader", "--jobs="+strings.Join(st1.Jobs, ","))
		cmd.Env = sc.env
		b, _ := cmd.Output()
		return strings.TrimSpace(string(b)) == ""
	})
	// The cells the first run completed: a task output ending with the result is the authority.
	completed := map[string]bool{}
	outs, _ := filepath.Glob(filepath.Join(out, SlurmDir, "*.out"))
	for _, f := range outs {
		data, _ := os.ReadFile(f)
		if r, ok := lastResult(data, ""); ok {
			completed[r.Cell.ID] = true
		}
	}
	if len(completed) < 2 || len(completed) == len(cells) {
		t.Fatalf("first run completed %d of %d cells; the test wants an interruption in the middle", len(completed), len(cells))
	}

	// Second run: resumes and finishes; completed cells are not submitted again.
	stdout, err := sc.run(t, bin, 90*time.Second, args...)
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	st2 := readState(t, out)
	var newJobs []string
	for _, j := range st2.Jobs {
		if !slices.Contains(st1.Jobs, j) {
			newJobs = append(newJobs, j)
		}
	}
	if len(newJobs) == 0 {
		t.Fatalf("the resumed run submitted nothing: %+v", st2)
	}
	for _, task := range st2.Tasks {
		job, _, _ := strings.Cut(task.Task, "_")
		if completed[task.CellID] && slices.Contains(newJobs, job) {
			t.Errorf("cell %d was completed by the first run but resubmitted as %s", task.Index, task.Task)
		}
		if !completed[task.CellID] && !slices.Contains(newJobs, job) {
			t.Errorf("cell %d was not completed by the first run but not resubmitted (task %s)", task.Index, task.Task)
		}
	}
	records, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, r := range records {
		per[r.Cell.ID]++
		if r.Status != StatusOK {
			t.Errorf("cell %s: %s %s", r.Cell.Label, r.Status, r.Reason)
		}
	}
	for _, cell := range cells {
		if per[cell.ID] != 1 {
			t.Errorf("cell %s has %d journal records, want 1", cell.Label, per[cell.ID])
		}
	}
	t.Logf("interrupted after %d of %d cells; the resumed run submitted jobs %v: %s", len(completed), len(cells), newJobs, strings.TrimSpace(firstLine([]byte(stdout))))

	// The same directory resumes locally: nothing left to run.
	local, err := sc.run(t, bin, 30*time.Second, "profile", "run", "--spec", spec, "--out", out)
	if err != nil || !strings.Contains(local, fmt.Sprintf("(0 run now, %d from the journal)", len(cells))) {
		t.Errorf("local rerun of the Slurm campaign: %v\n%s", err, local)
	}
}

func testSlurmSweep(t *testing.T, sc *slurmCluster, bin string) {
	tmp := t.TempDir()
	local, remote := filepath.Join(tmp, "local"), filepath.Join(tmp, "slurm")
	start := time.Now()
	if _, err := sc.run(t, bin, 60*time.Second, "reproduce", "--label", "smoke", "--out", local); err != nil {
		t.Fatalf("local sweep: %v", err)
	}
	t.Logf("local smoke sweep in %.1f s", time.Since(start).Seconds())
	start = time.Now()
	stdout, err := sc.run(t, bin, 90*time.Second, "reproduce", "--label", "smoke", "--out", remote, "--backend", "slurm",
		"--slurm-dir", filepath.Join(tmp, "work"), "--runs-per-task", "16", "--poll", "200ms")
	if err != nil {
		t.Fatalf("slurm sweep: %v\n%s", err, stdout)
	}
	t.Logf("Slurm smoke sweep in %.1f s: %s", time.Since(start).Seconds(), strings.TrimSpace(stdout))
	a, b := treeFiles(t, local), treeFiles(t, remote)
	if len(a) == 0 {
		t.Fatal("the local sweep wrote nothing")
	}
	for name, data := range a {
		other, ok := b[name]
		switch {
		case !ok:
			t.Errorf("%s: missing from the Slurm sweep", name)
		case !bytes.Equal(data, other):
			t.Errorf("%s: differs between the local and the Slurm sweep", name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			t.Errorf("%s: only in the Slurm sweep", name)
		}
	}
	t.Logf("%d files identical", len(a))
}

// treeFiles reads every regular file below root, by relative path.
func treeFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return errors.New(p + ": not a regular file")
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(line)
}
