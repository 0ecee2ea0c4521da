package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sharebench/sharebench/runner/gpu"
)

const envHelperScript = "SHAREBENCH_HELPER_SCRIPT"

// TestHelperWorkload is not a test: run as a child (-test.run=^TestHelperWorkload$ with
// SHAREBENCH_HELPER_SCRIPT set) it plays a scripted workload on stdout/stdin and exits.
func TestHelperWorkload(t *testing.T) {
	script := os.Getenv(envHelperScript)
	if script == "" {
		t.Skip("helper process for the local-backend tests")
	}
	os.Exit(helperWorkload(script))
}

func helperWorkload(script string) int {
	out := bufio.NewWriter(os.Stdout)
	emit := func(e Event) {
		out.Write(AppendLine(nil, e))
		out.Flush()
	}
	raw := func(s string) {
		out.WriteString(s + "\n")
		out.Flush()
	}
	cmds := newCommandReader(os.Stdin)
	emit(Event{Event: EventStart, Run: "helper", Model: "m", Impl: "helper", Batch: 8, SubBatch: 4, Accum: 2, Device: "cpu", PID: os.Getpid(), Torch: "helper"})
	ready := func() {
		emit(Event{Event: EventReady, WarmupSteps: 1, MemReservedPeak: 1 << 20, MemAllocPeak: 1 << 19})
	}
	samples := 8
	stepLoop := func(limit int, onStep func(i int)) int {
		cmds.waitGo()
		n := 0
		for !cmds.stopped() && (limit == 0 || n < limit) {
			if onStep != nil {
				onStep(n)
			}
			t0 := gpu.MonotonicNs()
			time.Sleep(2 * time.Millisecond)
			t1 := gpu.MonotonicNs()
			emit(Event{Event: EventStep, I: n, T0Ns: t0, T1Ns: t1, MicroMs: []float64{1, 1}, StepMs: float64(t1-t0) / 1e6, Samples: samples})
			n++
		}
		return n
	}
	finish := func(n int) int {
		emit(Event{Event: EventMem, MaxAllocated: 1 << 19, MaxReserved: 2 << 20})
		emit(Event{Event: EventDone, Steps: n, Exit: "ok"})
		return 0
	}
	switch script {
	case "ok":
		ready()
		return finish(stepLoop(0, nil))
	case "noisy":
		fmt.Println("plain output line")
		emit(Event{Event: "progress"})
		ready()
		return finish(stepLoop(0, func(i int) {
			if i%5 == 0 {
				raw("log line from the workload")
			}
		}))
	case "oom":
		fmt.Fprintln(os.Stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB")
		emit(Event{Event: EventOOM, Phase: "warmup", Msg: "CUDA out of memory. Tried to allocate 20.00 GiB"})
		return ExitOOM
	case "oom-silent":
		return ExitOOM
	case "crash":
		ready()
		stepLoop(3, nil)
		fmt.Fprintln(os.Stderr, "Traceback (most recent call last):\nRuntimeError: boom at step 3")
		return 1
	case "early-exit":
		fmt.Fprintln(os.Stderr, "cannot build model")
		return 0
	case "garbage":
		ready()
		stepLoop(0, func(i int) {
			if i == 2 {
				raw(`{"v":1,"event":"step","i":2,"t0_ns":`)
			}
		})
		return 0
	case "v2":
		raw(`{"v":2,"event":"ready"}`)
		time.Sleep(time.Minute)
		return 0
	case "hang":
		// A grandchild in the same process group, then ignore SIGTERM and never get ready:
		// the runner must SIGKILL the whole group.
		signal.Ignore(syscall.SIGTERM)
		sleep := exec.Command("sleep", "300")
		if err := sleep.Start(); err == nil {
			if f := os.Getenv("SHAREBENCH_HELPER_PIDFILE"); f != "" {
				os.WriteFile(f, []byte(strconv.Itoa(sleep.Process.Pid)), 0o644)
			}
		}
		select {}
	case "stall":
		ready()
		stepLoop(3, nil)
		signal.Ignore(syscall.SIGTERM)
		select {}
	case "slow-stop":
		ready()
		n := stepLoop(0, nil)
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return finish(n)
	case "negative-samples":
		// A workload that miscounts: every step reports -8 samples.
		samples = -8
		ready()
		return finish(stepLoop(0, nil))
	case "cap":
		// 12 steps, fewer than the window asks for (20 + 2 trimmed at each end): the cap, not
		// the runner's stop, ends the run, however slow the machine.
		ready()
		return finish(stepLoop(12, nil))
	}
	fmt.Fprintln(os.Stderr, "unknown helper script", script)
	return 2
}

// helperCampaign is a campaign whose workload is this test binary playing script.
func helperCampaign(t *testing.T, script string, env map[string]string) *Campaign {
	t.Helper()
	c := mustParse(t, `
name: helper
solo_only: true
repeats: 1
max_repeats: 1
models: [{name: m, batches: [8], sub_batches: [4]}]
window: {min_steps: 20, min_seconds: 30, floor_steps: 5, trim: 2, max_seconds: 20}
timeouts: {ready: 3s, stall: 2s, grace: 500ms}
workload: {device: cpu}
`)
	// Short timeouts only where the script tests them: a busy machine may take seconds to
	// start a process or to schedule the next step.
	if script != "hang" {
		c.Timeouts.Ready = Duration(time.Minute)
	}
	if script != "stall" {
		c.Timeouts.Stall = Duration(time.Minute)
	}
	c.Workload.Command = []string{os.Args[0], "-test.run=^TestHelperWorkload$", "--"}
	c.Workload.Env = map[string]string{envHelperScript: script}
	for k, v := range env {
		c.Workload.Env[k] = v
	}
	return c
}

// runSolo executes the campaign's first cell's first run on b.
func runSolo(t *testing.T, c *Campaign, b Backend) RunResult {
	t.Helper()
	cell := c.Cells()[0]
	dir := t.TempDir()
	rc := &runCtx{c: c, cell: cell, backend: b, gpus: c.GPUs, outDir: dir, cellDir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rc.execute(ctx, plans(c, cell, 1)[0])
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	return res
}

func TestLocalHelperScripts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script     string
		status     Status
		reason     string // substring
		tail       string // substring of the stderr tail
		minSteps   int
		steps      int // exact window steps, when set
		maxElapsed time.Duration
	}{
		{script: "ok", status: StatusOK, minSteps: 16},
		{script: "noisy", status: StatusOK, minSteps: 16},
		{script: "cap", status: StatusOK, steps: 8},
		{script: "oom", status: StatusInfeasible, reason: "out of memory in warmup", tail: "OutOfMemoryError"},
		{script: "oom-silent", status: StatusInfeasible, reason: "exit code 3 without an oom event"},
		{script: "crash", status: StatusFailed, reason: "during measurement: exit code 1", tail: "RuntimeError: boom"},
		{script: "early-exit", status: StatusFailed, reason: "before ready: exit code 0", tail: "cannot build model"},
		{script: "garbage", status: StatusFailed, reason: "malformed protocol stream"},
		{script: "v2", status: StatusFailed, reason: "unsupported protocol version 2"},
		{script: "negative-samples", status: StatusFailed, reason: "samples -8: not a count"},
		// A bound on the time a kill may take, generous for a loaded machine: the point is that
		// the run ends at all.
		{script: "hang", status: StatusFailed, reason: "not ready within 3s", maxElapsed: time.Minute},
		{script: "stall", status: StatusFailed, reason: "made no step for 2s", maxElapsed: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
			if tt.script == "hang" {
				env["SHAREBENCH_HELPER_PIDFILE"] = pidFile
			}
			start := time.Now()
			res := runSolo(t, helperCampaign(t, tt.script, env), &Local{})
			elapsed := time.Since(start)
			if res.Status != tt.status || !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("status %s (%q), want %s (%q)", res.Status, res.Reason, tt.status, tt.reason)
			}
			if !strings.Contains(res.StderrTail, tt.tail) {
				t.Errorf("stderr tail %q does not contain %q", res.StderrTail, tt.tail)
			}
			if tt.minSteps > 0 && (len(res.Members) != 1 || res.Members[0].WindowSteps < tt.minSteps) {
				t.Errorf("members %+v: want at least %d window steps", res.Members, tt.minSteps)
			}
			if tt.steps > 0 && (len(res.Members) != 1 || res.Members[0].WindowSteps != tt.steps || res.Members[0].Steps != tt.steps+4) {
				t.Errorf("members %+v: want %d window steps of %d", res.Members, tt.steps, tt.steps+4)
			}
			if tt.maxElapsed > 0 && elapsed > tt.maxElapsed {
				t.Errorf("took %s, want under %s", elapsed, tt.maxElapsed)
			}
			if tt.script == "hang" {
				b, err := os.ReadFile(pidFile)
				if err != nil {
					t.Fatalf("grandchild pid: %v", err)
				}
				pid, _ := strconv.Atoi(string(b))
				if alive(pid) {
					t.Errorf("grandchild %d survived the process-group kill", pid)
				}
			}
		})
	}
}

func TestLocalSlowStopIsTerminated(t *testing.T) {
	t.Parallel()
	res := runSolo(t, helperCampaign(t, "slow-stop", nil), &Local{})
	// The measurement is complete; the process ignoring stop and SIGTERM is killed and noted.
	if res.Status != StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "was terminated") {
		t.Errorf("notes %q: want a note about the termination", res.Notes)
	}
	if e := res.Members[0].Exit; e == nil || e.Signal == "" {
		t.Errorf("exit %+v: want a signal", e)
	}
}

func TestLocalEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := (&Local{Environ: func() []string {
		return []string{"PATH=" + os.Getenv("PATH"), "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps"}
	}}).Start(context.Background(), Spec{
		Name: "env-test", Program: []string{"sh", "-c", `echo "$CUDA_VISIBLE_DEVICES|$OMP_NUM_THREADS|$CUDA_MPS_PIPE_DIRECTORY|$CUDA_MPS_LOG_DIRECTORY"; ls -A "$CUDA_MPS_PIPE_DIRECTORY" | wc -l`},
		Env: map[string]string{"OMP_NUM_THREADS": "3"}, GPUs: []string{"1"}, Isolate: true, RunDir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(p.Stdout())
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if len(lines) != 2 {
		t.Fatalf("output %q", lines)
	}
	f := strings.Split(lines[0], "|")
	if f[0] != "1" || f[1] != "3" || !strings.HasPrefix(f[2], dir) || f[2] != f[3] || strings.TrimSpace(lines[1]) != "0" {
		t.Errorf("environment %q: want CUDA_VISIBLE_DEVICES=1, OMP_NUM_THREADS=3 and a fresh empty MPS directory under %s", lines, dir)
	}
	if _, err := os.Stat(f[2]); !os.IsNotExist(err) {
		t.Errorf("MPS directory %s not removed after exit", f[2])
	}
}

func TestLocalStartErrors(t *testing.T) {
	t.Parallel()
	for _, s := range []Spec{
		{Name: "bad name", Program: []string{"true"}},
		{Name: "ok", Program: nil},
		{Name: "ok", Program: []string{"true"}, Env: map[string]string{"A=B": "x"}},
		{Name: "ok", Program: []string{"/nonexistent/python3"}},
	} {
		if p, err := (&Local{}).Start(context.Background(), s); err == nil {
			p.Wait()
			t.Errorf("Start(%+v) succeeded", s)
		}
	}
}
