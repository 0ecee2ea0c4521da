package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharebench/sharebench/runner/gpu"
)

// Status is the outcome of a run or a cell.
type Status string

// Outcomes. Per-cell failures are results, never errors: one bad cell never stops a campaign.
const (
	// StatusOK: measured.
	StatusOK Status = "ok"
	// StatusInfeasible: a process ran out of memory (oom event or exit code 3). Recorded,
	// never retried.
	StatusInfeasible Status = "infeasible"
	// StatusInfeasiblePredicted: the pair was not run because the solo memory peaks plus a
	// margin exceed the GPU's memory.
	StatusInfeasiblePredicted Status = "infeasible_predicted"
	// StatusFailed: a crash, a hang past a timeout, a malformed protocol stream, a start
	// failure or a raw file that could not be written; the record carries the reason and the
	// stderr tail.
	StatusFailed Status = "failed"
	// StatusUnavailable: the host cannot measure the cell (no MPS daemon, too few GPUs). It
	// runs again on every invocation, so a host that can measures it.
	StatusUnavailable Status = "unavailable"
)

// Done reports whether a cell with this status counts as completed on resume (ok and
// infeasible; failed cells rerun with --retry-failed, unavailable ones always).
func (s Status) Done() bool {
	return s == StatusOK || s == StatusInfeasible || s == StatusInfeasiblePredicted
}

// known reports whether s is a status this runner writes.
func (s Status) known() bool { return s.Done() || s == StatusFailed || s == StatusUnavailable }

// RunResult is one solo or pair run: one or two fresh processes released together.
type RunResult struct {
	// Run names the run within its cell, e.g. "r0-soloA" or "r1-pair".
	Run    string `json:"run"`
	Kind   string `json:"kind"`
	Repeat int    `json:"repeat"`
	// Seq is the run's position in the cell's execution order (ABBA).
	Seq        int    `json:"seq"`
	Status     Status `json:"status"`
	Reason     string `json:"reason,omitempty"`
	Phase      string `json:"phase,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// WindowNs is the overlap window [lo, hi] in CLOCK_MONOTONIC nanoseconds.
	WindowNs [2]int64 `json:"window_ns"`
	WindowS  float64  `json:"window_s"`
	// MeasureS is the wall time from "go" to the end of the run (every member stopped: exited,
	// or idle for warm workers): the window, the steps outside it and those in flight at stop.
	MeasureS    float64 `json:"measure_s,omitempty"`
	ShortWindow bool    `json:"short_window,omitempty"`
	// StartSkewMs is |first step start of A − first step start of B| in a pair: how
	// closely the barrier released the two processes.
	StartSkewMs float64        `json:"start_skew_ms,omitempty"`
	MPSObserved bool           `json:"mps_observed,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	Members     []MemberResult `json:"members"`
	Telemetry   *gpu.Summary   `json:"telemetry,omitempty"`
	// Files are the run's raw files, relative to the output directory.
	Files []string `json:"files,omitempty"`
}

// MemberResult is one process of a run.
type MemberResult struct {
	Role   string `json:"role"` // "A" or "B"
	Member Member `json:"member"`
	// ID is the run id passed as --run-id.
	ID   string `json:"id"`
	Exit *Exit  `json:"exit,omitempty"`
	Impl string `json:"impl,omitempty"`
	// Steps counts the steps received; WindowSteps those kept in the window.
	Steps       int `json:"steps"`
	WindowSteps int `json:"window_steps"`
	// StepMs describes the window's step times from the workload's t0_ns/t1_ns.
	StepMs Dist `json:"step_ms"`
	// LoggedStepMs is the median of the workload's own step_ms over the same steps.
	LoggedStepMs float64 `json:"logged_step_ms,omitempty"`
	FirstT0Ns    int64   `json:"first_t0_ns,omitempty"`
	SamplesPerS  float64 `json:"samples_per_s,omitempty"`
	// MemReservedBytes and MemAllocBytes are the allocator's peaks, the larger of the warm-up
	// (ready) and measurement (mem) phases; MemDeviceBytes the driver's account of the job's
	// processes (CUDA context included) at the ends of those phases, 0 when unknown.
	MemReservedBytes int64   `json:"mem_reserved_bytes,omitempty"`
	MemAllocBytes    int64   `json:"mem_alloc_bytes,omitempty"`
	MemDeviceBytes   int64   `json:"mem_device_bytes,omitempty"`
	MemSource        string  `json:"mem_source,omitempty"`
	WarmupSteps      int     `json:"warmup_steps,omitempty"`
	WarmupS          float64 `json:"warmup_s,omitempty"`

	durs  []float64 // window step times, ms (pooled into cell statistics, not serialised)
	start *Event
}

// runPlan is one run to execute.
type runPlan struct {
	name    string // r0-soloA
	kind    string // solo | pair
	repeat  int
	seq     int
	members []Member
	roles   []string
}

// runCtx is what executing runs of one cell needs.
type runCtx struct {
	c       *Campaign
	cell    Cell
	backend Backend
	sampler gpu.Sampler
	gpus    []string
	devIdx  []int
	outDir  string
	cellDir string
	log     *slog.Logger
	// token marks the processes of the campaign (EnvToken); mpsDir is the MPS daemon's pipe
	// directory for mps cells ("" for time-slicing, which gets a private empty one).
	token  string
	mpsDir string
	// pool holds the warm workers of a campaign with workers: warm (nil: fresh processes).
	pool *warmPool
}

type msgKind int

const (
	msgEvent msgKind = iota
	msgProtoErr
	msgExit
)

type runMsg struct {
	i    int
	kind msgKind
	ev   Event
	err  error
	exit Exit
}

// child is one workload process of a run, owned by the collector goroutine.
type child struct {
	role, runID string
	plan        string
	m           Member
	proc        Process
	files       []*rawFile
	tail        *tailBuffer

	start, ready, mem, done, oom *Event
	steps                        []Step
	perr                         error
	started, exited, stopSent    bool
	terminated                   bool
	exit                         Exit
	lastStep                     time.Time
}

type runPhase int

const (
	phaseWarm runPhase = iota
	phaseMeasure
	phaseStop
)

// execute performs one run: start the members one after another, each
// warming up alone until ready; write "go" to all back to back; collect steps until every
// member meets the window rule (or max_seconds); send stop; reap. Per-run failures are
// returned in the RunResult; the error is for cancellation and infrastructure only.
func (rc *runCtx) execute(ctx context.Context, plan runPlan) (RunResult, error) {
	if rc.pool != nil {
		return rc.executeWarm(ctx, plan)
	}
	res := RunResult{Run: plan.name, Kind: plan.kind, Repeat: plan.repeat, Seq: plan.seq}
	c := rc.c
	runDir, err := os.MkdirTemp("", "sharebench-run-")
	if err != nil {
		return res, fmt.Errorf("runner: cell %s: %w", rc.cell.Label, err)
	}
	defer os.RemoveAll(runDir)

	kids := make([]*child, len(plan.members))
	for i, m := range plan.members {
		kids[i] = &child{role: plan.roles[i], plan: plan.name, m: m, runID: fmt.Sprintf("%s-%s-%s", rc.cell.ID[:8], plan.name, plan.roles[i]), tail: newTailBuffer(4096)}
	}
	msgs := make(chan runMsg, 1024)
	grace := c.Timeouts.Grace.D()

	var (
		phase                         = phaseWarm
		cur                           = -1
		live                          int
		readyBy, goAt, stopAt, killAt time.Time
		failure, failRole             string
		infeasible                    bool
		cancelled, abandoned          bool
		slowNoted                     bool
		tcancel                       context.CancelFunc
		tdone                         chan gpu.Summary
		tfile                         *rawFile
	)
	fail := func(k *child, reason string) {
		if failure == "" && !infeasible {
			failure, failRole = reason, k.role
		}
	}
	stopTelemetry := func() {
		if tcancel != nil {
			tcancel()
			tcancel = nil
		}
	}
	stopAll := func() {
		if phase != phaseStop {
			phase, stopAt = phaseStop, time.Now()
			stopTelemetry()
		}
		for _, k := range kids {
			if k.started && !k.exited && !k.stopSent {
				k.stopSent = true
				io.WriteString(k.proc.Stdin(), CmdStop+"\n")
				k.proc.Stdin().Close()
			}
		}
	}
	terminateAll := func() {
		stopAll()
		for _, k := range kids {
			if k.started && !k.exited && !k.terminated {
				k.terminated = true
				k.proc.Terminate(grace)
				killAt = time.Now()
			}
		}
	}
	startNext := func() {
		cur++
		k := kids[cur]
		if err := rc.startChild(ctx, k, cur, msgs, runDir, &res); err != nil {
			fail(k, err.Error())
			stopAll()
			return
		}
		k.started = true
		live++
		readyBy = time.Now().Add(c.Timeouts.Ready.D())
	}
	sendGo := func() {
		now := time.Now()
		for _, k := range kids {
			io.WriteString(k.proc.Stdin(), CmdGo+"\n")
			k.lastStep = now
		}
		phase, goAt = phaseMeasure, now
		if rc.sampler != nil && rc.sampler.Name() != gpu.SourceNone {
			var tctx context.Context
			tctx, tcancel = context.WithCancel(ctx)
			tdone = make(chan gpu.Summary, 1)
			tf, err := rc.create(plan.name+".telemetry.jsonl", &res)
			if err != nil {
				fail(kids[0], err.Error())
			}
			tfile = tf
			go func() {
				var w io.Writer = io.Discard
				if tf != nil {
					w = tf
				}
				tdone <- gpu.Record(tctx, rc.sampler, c.TelemetryInterval.D(), rc.devIdx, w)
			}()
		}
	}

	startNext()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	ctxDone := ctx.Done()
	for live > 0 && !abandoned {
		select {
		case <-ctxDone:
			ctxDone = nil
			cancelled = true
			terminateAll()
		case m := <-msgs:
			k := kids[m.i]
			switch m.kind {
			case msgEvent:
				ev := m.ev
				switch ev.Event {
				case EventStart:
					k.start = &ev
				case EventReady:
					k.ready = &ev
					if phase == phaseWarm && m.i == cur {
						if cur+1 < len(kids) {
							startNext()
						} else {
							sendGo()
						}
					}
				case EventStep:
					if phase == phaseWarm {
						fail(k, fmt.Sprintf("protocol: step %d before go", ev.I))
						terminateAll()
						break
					}
					k.steps = append(k.steps, Step{T0Ns: ev.T0Ns, T1Ns: ev.T1Ns, StepMs: ev.StepMs, Samples: ev.Samples})
					k.lastStep = time.Now()
					if phase == phaseMeasure && WindowSatisfied(stepsOf(kids), c.Window) {
						stopAll()
					}
				case EventMem:
					k.mem = &ev
				case EventDone:
					k.done = &ev
				case EventOOM:
					k.oom = &ev
					if !infeasible {
						infeasible = true
						res.Phase = ev.Phase
						failure, failRole = fmt.Sprintf("out of memory in %s (%s)", ev.Phase, k.m), k.role
					}
					stopAll()
				}
			case msgProtoErr:
				k.perr = m.err
				fail(k, fmt.Sprintf("malformed protocol stream: %v", m.err))
				terminateAll()
			case msgExit:
				k.exited = true
				k.exit = m.exit
				live--
				if m.err != nil {
					fail(k, m.err.Error())
				}
				switch {
				case k.oom != nil || m.exit.Code == ExitOOM:
					if !infeasible {
						infeasible = true
						res.Phase = "unknown"
						failure, failRole = fmt.Sprintf("out of memory (%s, exit code 3 without an oom event)", k.m), k.role
					}
					stopAll()
				case cancelled:
				case k.terminated:
					if failure == "" && phase == phaseStop {
						res.Notes = append(res.Notes, fmt.Sprintf("%s did not exit within %s of stop and was terminated", k.role, grace))
					}
				case k.stopSent:
					if m.exit.Code != 0 || m.exit.Signal != "" {
						fail(k, fmt.Sprintf("%s: %s after stop", k.m, m.exit))
					}
				case phase == phaseMeasure && m.exit.Code == 0 && k.done != nil:
					stopAll() // reached its step cap: end the run for everyone
				default:
					what := "before ready"
					if k.ready != nil {
						what = "during measurement"
					}
					fail(k, fmt.Sprintf("%s exited %s: %s", k.m, what, m.exit))
					stopAll()
				}
			}
		case now := <-tick.C:
			switch {
			case phase == phaseWarm && cur >= 0 && kids[cur].started && kids[cur].ready == nil && now.After(readyBy):
				fail(kids[cur], fmt.Sprintf("hang: %s not ready within %s", kids[cur].m, c.Timeouts.Ready))
				terminateAll()
			case phase == phaseMeasure:
				if now.Sub(goAt).Seconds() > c.Window.MaxSeconds {
					if KeepsSteps(stepsOf(kids), c.Window.Trim) {
						res.Notes = append(res.Notes, fmt.Sprintf("max_seconds %gs reached before the window requirement", c.Window.MaxSeconds))
						stopAll()
						break
					}
					if !slowNoted {
						slowNoted = true
						res.Notes = append(res.Notes, fmt.Sprintf("max_seconds %gs reached before every member kept a step: measured until each kept one", c.Window.MaxSeconds))
					}
				}
				for _, k := range kids {
					if !k.exited && now.Sub(k.lastStep) > c.Timeouts.Stall.D() {
						fail(k, fmt.Sprintf("hang: %s made no step for %s", k.m, c.Timeouts.Stall))
						terminateAll()
						break
					}
				}
			case phase == phaseStop:
				if killAt.IsZero() && now.Sub(stopAt) > grace {
					terminateAll()
				} else if !killAt.IsZero() && now.Sub(killAt) > 2*grace+30*time.Second {
					abandoned = true
				}
			}
		}
	}
	if !goAt.IsZero() {
		res.MeasureS = time.Since(goAt).Seconds()
	}
	stopTelemetry()
	if tdone != nil {
		sum := <-tdone
		res.Telemetry = &sum
		if sum.MPSProcsMax > 0 {
			res.MPSObserved = true
			res.Notes = append(res.Notes, fmt.Sprintf("MPS processes observed during the window (%d): not a time-slicing measurement", sum.MPSProcsMax))
		}
	}
	var writeErr error
	for _, k := range kids {
		for _, f := range k.files {
			writeErr = cmpOrErr(writeErr, f.close())
		}
		if k.proc != nil {
			k.proc.Close()
		}
	}
	if tfile != nil {
		writeErr = cmpOrErr(writeErr, tfile.close())
	}
	if pids := killTokenProcs(rc.runToken(plan.name)); len(pids) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d process(es) that had left the run's process group were killed: %v", len(pids), pids))
		rc.log.Warn("workload processes escaped their process group; killed", "cell", rc.cell.Label, "run", plan.name, "pids", pids)
	}
	if abandoned {
		go func() {
			for range msgs {
			}
		}()
		return res, fmt.Errorf("runner: cell %s: run %s: processes did not exit after SIGKILL", rc.cell.Label, plan.name)
	}

	res.Members = memberResults(kids)
	if cancelled {
		return res, fmt.Errorf("runner: cell %s: run %s: %w", rc.cell.Label, plan.name, context.Cause(ctx))
	}
	if rc.failed(&res, plan, kids, writeErr, infeasible, failure, failRole) {
		return res, nil
	}
	rc.measured(&res, kids)
	return res, nil
}

// memberResults describes the started members of a run from their events.
func memberResults(kids []*child) []MemberResult {
	var out []MemberResult
	for _, k := range kids {
		if !k.started {
			continue
		}
		mr := MemberResult{Role: k.role, Member: k.m, ID: k.runID, Steps: len(k.steps), start: k.start}
		if k.exited {
			e := k.exit
			mr.Exit = &e
		}
		if k.start != nil {
			mr.Impl = k.start.Impl
		}
		if k.ready != nil {
			mr.WarmupSteps, mr.WarmupS = k.ready.WarmupSteps, k.ready.WarmupS
			mr.MemReservedBytes, mr.MemAllocBytes, mr.MemSource = k.ready.MemReservedPeak, k.ready.MemAllocPeak, k.ready.MemSource
			mr.MemDeviceBytes = k.ready.MemDeviceBytes
		}
		if k.mem != nil {
			mr.MemReservedBytes = max(mr.MemReservedBytes, k.mem.MaxReserved)
			mr.MemAllocBytes = max(mr.MemAllocBytes, k.mem.MaxAllocated)
			mr.MemDeviceBytes = max(mr.MemDeviceBytes, k.mem.MemDeviceBytes)
			if k.mem.MemSource != "" {
				mr.MemSource = k.mem.MemSource
			}
		}
		out = append(out, mr)
	}
	return out
}

// failed records why a run is not a measurement, if it is not: its raw files could not be
// written, a member ran out of memory, or another failure; it reports whether it did.
func (rc *runCtx) failed(res *RunResult, plan runPlan, kids []*child, writeErr error, infeasible bool, failure, failRole string) bool {
	tailOf := func(role string) string {
		for _, k := range kids {
			if k.role == role {
				return strings.TrimSpace(k.tail.String())
			}
		}
		return ""
	}
	switch {
	case writeErr != nil:
		// The measurement cannot be checked against its raw data: fail loudly, never keep it.
		rc.log.Error("raw files of a run could not be written", "cell", rc.cell.Label, "run", plan.name, "err", writeErr)
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("writing raw files: %v", writeErr)
	case infeasible:
		res.Status, res.Reason, res.StderrTail = StatusInfeasible, failure, tailOf(failRole)
	case failure != "":
		res.Status, res.Reason, res.StderrTail = StatusFailed, failure, tailOf(failRole)
	default:
		return false
	}
	return true
}

// measured computes the run's overlap window and each member's step statistics over it, and
// sets the run's status.
func (rc *runCtx) measured(res *RunResult, kids []*child) {
	c := rc.c
	jobs := stepsOf(kids)
	lo, hi, ok := OverlapWindow(jobs)
	if !ok {
		res.Status, res.Reason = StatusFailed, "no overlapping steps (a process made no step)"
		return
	}
	res.WindowNs, res.WindowS = [2]int64{lo, hi}, float64(hi-lo)/1e9
	for i := range res.Members {
		mr := &res.Members[i]
		kept := InWindow(jobs[i], lo, hi, c.Window.Trim)
		if len(kept) == 0 {
			res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: no steps left in the window after trimming", mr.Member)
			return
		}
		if !MeetsWindow(kept, c.Window) {
			res.ShortWindow = true
		}
		logged := make([]float64, len(kept))
		mr.durs = make([]float64, len(kept))
		samples := 0
		for j, s := range kept {
			mr.durs[j], logged[j] = s.Ms(), s.StepMs
			samples += s.Samples
		}
		mr.WindowSteps = len(kept)
		mr.StepMs = Describe(mr.durs)
		mr.LoggedStepMs = Median(logged)
		mr.FirstT0Ns = jobs[i][0].T0Ns
		if mr.StepMs.Median > 0 {
			mr.SamplesPerS = float64(samples) / float64(len(kept)) / (mr.StepMs.Median / 1000)
		}
	}
	if res.ShortWindow {
		res.Notes = append(res.Notes, fmt.Sprintf("short_window: fewer than %d steps and %gs in the window (or fewer than %d steps)", c.Window.MinSteps, c.Window.MinSeconds, c.Window.FloorSteps))
	}
	if len(res.Members) == 2 {
		d := res.Members[0].FirstT0Ns - res.Members[1].FirstT0Ns
		res.StartSkewMs = float64(max(d, -d)) / 1e6
	}
	res.Status = StatusOK
}

func stepsOf(kids []*child) [][]Step {
	out := make([][]Step, len(kids))
	for i, k := range kids {
		out[i] = k.steps
	}
	return out
}

// create creates a raw file in the cell directory and records it in res.Files.
func (rc *runCtx) create(name string, res *RunResult) (*rawFile, error) {
	f, err := os.Create(filepath.Join(rc.cellDir, name))
	if err != nil {
		return nil, fmt.Errorf("runner: cell %s: %w", rc.cell.Label, err)
	}
	if rel, err := filepath.Rel(rc.outDir, f.Name()); err == nil {
		res.Files = append(res.Files, filepath.ToSlash(rel))
	}
	return &rawFile{f: f}, nil
}

// rawFile is a run's raw file. Writers that cannot report errors write to it (the parser's
// copy of the protocol stream, the stderr copier, telemetry), so it keeps the first error
// for the run to fail on (a full disk must never leave a cell "ok" with empty raw files).
type rawFile struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

func (r *rawFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.f.Write(p)
	if err != nil {
		r.err = fmt.Errorf("%s: %w", filepath.Base(r.f.Name()), err)
	}
	return n, err
}

// close flushes the file to disk and returns the first error of its life.
func (r *rawFile) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.f.Sync(); err != nil && r.err == nil {
		r.err = fmt.Errorf("%s: %w", filepath.Base(r.f.Name()), err)
	}
	if err := r.f.Close(); err != nil && r.err == nil && !errors.Is(err, os.ErrClosed) {
		r.err = fmt.Errorf("%s: %w", filepath.Base(r.f.Name()), err)
	}
	return r.err
}

func cmpOrErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// startChild starts k and the goroutines that feed msgs: a parser on stdout, a copier of
// stderr into the run log and the tail buffer, and a waiter that sends the exit last.
func (rc *runCtx) startChild(ctx context.Context, k *child, i int, msgs chan<- runMsg, runDir string, res *RunResult) error {
	base := strings.TrimPrefix(k.runID, rc.cell.ID[:8]+"-")
	raw, err := rc.create(base+".events.jsonl", res)
	if err != nil {
		return err
	}
	logf, err := rc.create(base+".log", res)
	if err != nil {
		raw.close()
		return err
	}
	k.files = []*rawFile{raw, logf}
	spec := rc.spec(k, runDir)
	fmt.Fprintf(logf, "# %s\n", strings.Join(append(append([]string{}, spec.Program...), spec.Args...), " "))
	proc, err := rc.backend.Start(ctx, spec)
	if err != nil {
		fmt.Fprintf(logf, "# start failed: %v\n", err)
		k.tail.Write([]byte(err.Error()))
		return fmt.Errorf("%s: cannot start: %v", k.m, err)
	}
	k.proc = proc
	logw := logf
	stdoutDone, stderrDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stdoutDone)
		p := NewParser(proc.Stdout())
		p.Log, p.Raw = prefixWriter{"[stdout] ", logw}, raw
		for {
			ev, err := p.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				msgs <- runMsg{i: i, kind: msgProtoErr, err: err}
				io.Copy(logw, proc.Stdout())
				return
			}
			msgs <- runMsg{i: i, kind: msgEvent, ev: ev}
		}
	}()
	go func() {
		defer close(stderrDone)
		io.Copy(io.MultiWriter(logw, k.tail), proc.Stderr())
	}()
	go func() {
		exit, err := proc.Wait()
		t := time.NewTimer(5 * time.Second)
		select {
		case <-stdoutDone:
		case <-t.C:
			proc.Close() // a grandchild outside the process group holds the pipe
			<-stdoutDone
		}
		<-stderrDone
		t.Stop()
		fmt.Fprintf(logw, "# %s\n", exit)
		msgs <- runMsg{i: i, kind: msgExit, exit: exit, err: err}
	}()
	return nil
}

// prefixWriter writes each (line) write with a prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// spec builds the Spec of one child.
func (rc *runCtx) spec(k *child, runDir string) Spec {
	return workloadSpec(rc.c, k.m, k.runID, rc.runToken(k.plan)+k.role, runDir, rc.mpsDir, rc.gpus)
}

// workloadSpec builds the Spec of a workload process of configuration m: its arguments, its
// environment (token is its EnvToken), its scratch directory, the MPS daemon's pipe directory
// ("" isolates it from MPS) and its GPUs.
func workloadSpec(c *Campaign, m Member, runID, token, runDir, mpsDir string, gpus []string) Spec {
	threads := strconv.Itoa(c.Workload.Threads)
	env := map[string]string{
		"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "HF_HUB_OFFLINE": "1",
	}
	for k, v := range c.Workload.Env {
		env[k] = v
	}
	env[EnvToken] = token
	s := Spec{
		Name: "sb-" + runID + "-" + nonce(), Args: workloadArgs(c, m, runID), Env: env, RunDir: runDir,
		Isolate: mpsDir == "",
	}
	if mpsDir != "" {
		env["CUDA_MPS_PIPE_DIRECTORY"], env["CUDA_MPS_LOG_DIRECTORY"] = mpsDir, mpsDir
	}
	if c.Workload.Device == "cuda" {
		s.GPUs = gpus
	}
	if c.Backend == BackendContainer {
		s.Image = c.Container.Image
		s.Program = c.Container.Command
		if len(s.Program) == 0 {
			s.Program = []string{c.Container.Python, c.Container.MountPoint + "/" + filepath.Base(c.Workload.Script)}
		}
		if dir, err := filepath.Abs(c.Container.WorkloadsDir); err == nil && c.Container.WorkloadsDir != "" {
			s.Mounts = []Mount{{Host: dir, Container: c.Container.MountPoint, ReadOnly: true}}
		}
		return s
	}
	s.Program = c.Workload.Command
	if len(s.Program) == 0 {
		s.Program = []string{c.Workload.Python, c.Workload.Script}
	}
	return s
}

// workloadArgs returns the train.py flags for one process.
func workloadArgs(c *Campaign, m Member, runID string) []string {
	w := c.Workload
	a := []string{
		"--model", m.Model, "--batch", strconv.Itoa(m.Batch), "--sub-batch", strconv.Itoa(m.SubBatch),
		"--device", w.Device, "--warmup-steps", strconv.Itoa(c.Warmup.Steps),
		"--warmup-seconds", strconv.FormatFloat(c.Warmup.Seconds, 'g', -1, 64),
		"--threads", strconv.Itoa(w.Threads), "--seed", strconv.FormatInt(c.Seed, 10), "--run-id", runID,
		"--amp", w.AMP, "--precision", w.Precision,
	}
	if m.NGPUs() > 1 {
		a = append(a, "--gpus", strconv.Itoa(m.NGPUs()))
	}
	if w.Tiny {
		a = append(a, "--tiny")
	}
	if m.SeqLen > 0 {
		a = append(a, "--seq-len", strconv.Itoa(m.SeqLen))
	}
	if m.ImageSize > 0 {
		a = append(a, "--image-size", strconv.Itoa(m.ImageSize))
	}
	if w.MemFraction > 0 {
		a = append(a, "--mem-fraction", strconv.FormatFloat(w.MemFraction, 'g', -1, 64))
	}
	if w.Impl != "" {
		a = append(a, "--impl", w.Impl)
	}
	if w.MaxSteps > 0 {
		a = append(a, "--max-steps", strconv.Itoa(w.MaxSteps))
	}
	a = append(a, w.Args...)
	return append(a, m.Args...)
}

// runToken is the EnvToken value of the processes of one run (plan "r0-pair") and prefix:
// "CAMPAIGN/CELL/RUN/", then the role; a prefix selects a campaign, a cell or a run.
func (rc *runCtx) runToken(plan string) string {
	return rc.token + "/" + rc.cell.ID[:8] + "/" + plan + "/"
}

// nonce returns 6 random hex digits that keep container names unique across reruns.
func nonce() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
