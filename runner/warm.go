package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

// RecordWorkers is the Record of a WorkersRecord in the journal.
const RecordWorkers = "workers"

// WorkersDir is the directory of a campaign directory that holds the warm workers' own raw
// files: what they print outside the runs' windows (start, build, warm-up, exit).
const WorkersDir = "workers"

// WorkersRecord is the journal record (record "workers") of a group of warm workers made
// ready before the first cell that needs them: how long they took to start and build (all at
// once) and to warm up (one at a time), and which earlier workers were retired first. Readers
// of cell records skip it; the device check's summary reports it beside each cell's window and
// setup times.
type WorkersRecord struct {
	Record   string    `json:"record"`
	Campaign string    `json:"campaign"`
	Group    string    `json:"group"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// RetireS is the time taken to stop Retired workers no later cell needs; LoadS the wall
	// time from the first start to the last "loaded"; WarmS the sum of the warm-ups.
	Retired int            `json:"retired"`
	RetireS float64        `json:"retire_s"`
	LoadS   float64        `json:"load_s"`
	WarmS   float64        `json:"warm_s"`
	Workers []WorkerReport `json:"workers"`
}

// WorkerReport is one warm worker of a WorkersRecord.
type WorkerReport struct {
	Key      string `json:"key"`
	Mode     string `json:"mode"`
	Member   Member `json:"member"`
	Instance int    `json:"instance"`
	PID      int    `json:"pid,omitempty"`
	// LoadS is the runner's time from starting the process to its "loaded" (interpreter,
	// imports, CUDA initialisation, model build); BuildS the workload's own build time.
	LoadS          float64 `json:"load_s"`
	BuildS         float64 `json:"build_s"`
	WarmupS        float64 `json:"warmup_s"`
	WarmupSteps    int     `json:"warmup_steps"`
	WarmupStepMs   float64 `json:"warmup_step_ms,omitempty"`
	MemDeviceBytes int64   `json:"mem_device_bytes,omitempty"`
	Status         Status  `json:"status"`
	Reason         string  `json:"reason,omitempty"`
}

// workerKey names a warm worker: a configuration under a sharing mode (the MPS client binding
// is made when CUDA starts, so a worker never changes mode), and its instance (1 is the second
// process of a pair of the configuration with itself).
type workerKey struct {
	mode string
	m    Member
	inst int
}

func (k workerKey) String() string { return fmt.Sprintf("%s %s #%d", k.mode, k.m, k.inst) }

// id is the key as a file, token and container name part.
func (k workerKey) id() string {
	return strings.NewReplacer("/", "_", " ", "-", "#", "").Replace(fmt.Sprintf("%s-%s-%d", k.mode, k.m, k.inst))
}

// workerKeys returns the workers a cell's runs use.
func workerKeys(cell Cell) []workerKey {
	mode := cellMode(cell)
	keys := []workerKey{{mode, cell.A, 0}}
	if cell.B != nil {
		inst := 0
		if cell.SameConfig() {
			inst = 1
		}
		keys = append(keys, workerKey{mode, *cell.B, inst})
	}
	return keys
}

// workerError is why a warm worker cannot serve a run; oom marks an out-of-memory failure
// (the run is then infeasible, as a fresh process's would be).
type workerError struct {
	reason string
	oom    bool
	tail   string
}

func (e *workerError) Error() string { return e.reason }

// worker is one warm workload process (train.py --serve).
type worker struct {
	key   workerKey
	runID string
	proc  Process
	// msgs carries the worker's events, protocol errors and, last, its exit.
	msgs chan runMsg
	// raw and log receive its protocol lines and stderr: the current run's files during a
	// window, the worker's own files otherwise.
	raw, log *switchWriter
	own      []*rawFile
	tail     *tailBuffer

	start, loaded, ready *Event
	exited               bool
	exit                 Exit
	// err is why the worker never became ready (it did not start, build or warm up): sticky,
	// the runs that need it fail with it. dead marks a worker that was ready and then failed
	// in a run (out of memory next to a peer, a crash, a hang): the next run replaces it.
	err       *workerError
	dead      bool
	startedAt time.Time
	loadS     float64
	windows   int
}

func (w *worker) alive() bool { return w.err == nil && !w.dead && !w.exited }

// pid is the workload's own process id, from its start event (0 when unknown).
func (w *worker) pid() int {
	if w.start != nil {
		return w.start.PID
	}
	return 0
}

// send writes a command line to the worker's stdin.
func (w *worker) send(cmd string) {
	io.WriteString(w.proc.Stdin(), cmd+"\n")
}

// switchWriter forwards writes to a writer that can be swapped between runs.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

// warmPool holds the warm workers of a campaign (workers: warm). Run asks it to prepare the
// workers of a group of cells before the group's first cell: it stops the workers no remaining
// cell needs, starts the missing ones all at once, waits until each has built its model, and
// then warms them up one at a time, so that each autotunes alone on the GPU as a fresh
// process's warm-up does. A cell's runs then only send "go" and "stop". A worker that died (out
// of memory in a pair, a crash) is replaced when a later run needs it; one that could not
// start, build or warm up is not retried, and the runs that need it fail with its reason.
// Cells of a warm campaign run one at a time (one GPU), so a worker serves one run at a time.
type warmPool struct {
	c       *Campaign
	backend Backend
	gpus    []string
	outDir  string
	dir     string // scratch directory shared by the workers (the fake backend's "GPU")
	token   string
	mpsDir  string // the MPS daemon's pipe directory for mps workers ("" without MPS)
	log     *slog.Logger
	record  func(WorkersRecord)
	workers map[string]*worker
	starts  map[string]int // processes started per worker key
	seq     int
}

// maxWorkerStarts bounds the processes one configuration's worker may start: a worker that keeps
// dying (a workload that cannot run here) would otherwise cost a start and a warm-up per cell.
const maxWorkerStarts = 3

// newWarmPool creates a pool whose workers get gpus, carry token+"/w/..." in their environment
// and write their own raw files under outDir/workers.
func newWarmPool(c *Campaign, b Backend, gpus []string, outDir, token, mpsDir string, log *slog.Logger, record func(WorkersRecord)) (*warmPool, error) {
	if err := os.MkdirAll(filepath.Join(outDir, WorkersDir), 0o755); err != nil {
		return nil, fmt.Errorf("runner: campaign %s: warm workers: %w", c.Name, err)
	}
	dir, err := os.MkdirTemp("", "sharebench-workers-")
	if err != nil {
		return nil, fmt.Errorf("runner: campaign %s: warm workers: %w", c.Name, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if record == nil {
		record = func(WorkersRecord) {}
	}
	return &warmPool{c: c, backend: b, gpus: gpus, outDir: outDir, dir: dir, token: token, mpsDir: mpsDir, log: log,
		record: record, workers: map[string]*worker{}, starts: map[string]int{}}, nil
}

// ownPIDs returns the process ids of the live workers (the foreign-process check skips them).
func (p *warmPool) ownPIDs() map[int]bool {
	out := map[int]bool{}
	for _, w := range p.workers {
		if pid := w.pid(); pid > 0 && !w.exited {
			out[pid] = true
		}
	}
	return out
}

// prepare makes the workers of cells ready for group: it retires the workers no cell of keep
// needs, then starts the missing workers of cells and warms them up. Workers that fail are
// reported in the record and keep their error for the runs that need them.
func (p *warmPool) prepare(ctx context.Context, group string, cells, keep []Cell) WorkersRecord {
	rec := WorkersRecord{Record: RecordWorkers, Campaign: p.c.Name, Group: group, Started: time.Now().UTC()}
	needed := map[string]bool{}
	for _, cell := range keep {
		for _, k := range workerKeys(cell) {
			needed[k.String()] = true
		}
	}
	t0 := time.Now()
	rec.Retired = p.retire(func(k string) bool { return needed[k] })
	rec.RetireS = time.Since(t0).Seconds()

	var fresh []*worker
	seen := map[string]bool{}
	for _, cell := range cells {
		for _, k := range workerKeys(cell) {
			s := k.String()
			if seen[s] {
				continue
			}
			seen[s] = true
			if w, ok := p.workers[s]; ok && (w.alive() || w.err != nil) {
				continue // running, or failed to become ready: not retried
			}
			fresh = append(fresh, p.spawn(ctx, k))
		}
	}
	t1 := time.Now()
	for _, w := range fresh {
		p.await(ctx, w, EventLoaded, t1)
	}
	rec.LoadS = time.Since(t1).Seconds()
	t2 := time.Now()
	for _, w := range fresh {
		if w.alive() {
			p.warm(ctx, w)
		}
	}
	rec.WarmS = time.Since(t2).Seconds()
	for _, w := range fresh {
		rec.Workers = append(rec.Workers, w.report())
	}
	rec.Finished = time.Now().UTC()
	if len(fresh) == 0 && rec.Retired == 0 {
		return rec
	}
	p.record(rec)
	p.log.Info("warm workers ready", "group", group, "started", len(fresh), "retired", rec.Retired,
		"load_s", round3(rec.LoadS), "warm_s", round3(rec.WarmS))
	return rec
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// report describes w for a WorkersRecord.
func (w *worker) report() WorkerReport {
	r := WorkerReport{Key: w.key.String(), Mode: w.key.mode, Member: w.key.m, Instance: w.key.inst, PID: w.pid(), LoadS: w.loadS, Status: StatusOK}
	if w.loaded != nil {
		r.BuildS = w.loaded.BuildS
	}
	if w.ready != nil {
		r.WarmupS, r.WarmupSteps, r.WarmupStepMs, r.MemDeviceBytes = w.ready.WarmupS, w.ready.WarmupSteps, w.ready.WarmupStepMs, w.ready.MemDeviceBytes
	}
	if w.err != nil {
		r.Status, r.Reason = StatusFailed, w.err.reason
		if w.err.oom {
			r.Status = StatusInfeasible
		}
	}
	return r
}

// get returns the ready worker of k for a run, starting and warming up a new one alone when
// there is none (the first run that needs it, or its worker died). The error says why it
// cannot serve.
func (p *warmPool) get(ctx context.Context, k workerKey) (*worker, error) {
	w := p.workers[k.String()]
	if w != nil && w.alive() {
		p.poll(w)
	}
	if w != nil && w.err != nil {
		return nil, w.err // it never became ready: not retried
	}
	if w == nil || !w.alive() {
		if w != nil {
			if n := p.starts[k.String()]; n >= maxWorkerStarts {
				w.err = &workerError{reason: fmt.Sprintf("%s: its warm worker died %d times (last: %s); not started again", k.m, n, w.exit),
					tail: strings.TrimSpace(w.tail.String())}
				return nil, w.err
			}
			p.log.Info("replacing a warm worker that exited", "worker", w.key.String(), "exit", w.exit.String())
		}
		rec := WorkersRecord{Record: RecordWorkers, Campaign: p.c.Name, Group: "replacement", Started: time.Now().UTC()}
		t0 := time.Now()
		w = p.spawn(ctx, k)
		p.await(ctx, w, EventLoaded, t0)
		rec.LoadS = time.Since(t0).Seconds()
		if w.alive() {
			t1 := time.Now()
			p.warm(ctx, w)
			rec.WarmS = time.Since(t1).Seconds()
		}
		rec.Workers = []WorkerReport{w.report()}
		rec.Finished = time.Now().UTC()
		p.record(rec)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if w.err != nil {
		return nil, w.err
	}
	return w, nil
}

// poll takes what an idle worker reported since its last run: an exit makes it dead; anything
// else is out of place (a worker prints nothing between windows) and makes it unusable.
func (p *warmPool) poll(w *worker) {
	for {
		select {
		case m := <-w.msgs:
			switch m.kind {
			case msgExit:
				w.exited, w.exit = true, m.exit
				return
			case msgProtoErr:
				p.log.Warn("warm worker: malformed protocol stream between windows; replacing it", "worker", w.key.String(), "err", m.err)
				p.kill(w)
			case msgEvent:
				p.log.Warn("warm worker: event between windows; replacing it", "worker", w.key.String(), "event", m.ev.Event)
				p.kill(w)
			}
		default:
			return
		}
	}
}

// fail records why w never became ready (sticky) and terminates it.
func (p *warmPool) fail(w *worker, reason string, oom bool) {
	if w.err == nil {
		w.err = &workerError{reason: reason, oom: oom, tail: strings.TrimSpace(w.tail.String())}
		p.log.Warn("warm worker failed", "worker", w.key.String(), "reason", reason)
	}
	p.kill(w)
}

// kill marks w dead and terminates it; the next run that needs its configuration replaces it.
func (p *warmPool) kill(w *worker) {
	w.dead = true
	if !w.exited && w.proc != nil {
		w.proc.Terminate(p.c.Timeouts.Grace.D())
	}
}

// discard lets go of a worker that is replaced: it closes its files and pipes once it has
// exited (its process was terminated when it failed).
func (p *warmPool) discard(w *worker) {
	if w.proc == nil {
		p.closeFiles(w)
		return
	}
	if !w.exited {
		w.proc.Terminate(p.c.Timeouts.Grace.D())
	}
	go func() {
		for !w.exited {
			if m := <-w.msgs; m.kind == msgExit {
				w.exited, w.exit = true, m.exit
			}
		}
		w.proc.Close()
		p.closeFiles(w)
	}()
}

// spawn starts the process of worker k; a start failure is recorded in the worker's error.
func (p *warmPool) spawn(ctx context.Context, k workerKey) *worker {
	p.seq++
	c := p.c
	w := &worker{key: k, runID: fmt.Sprintf("w%02d-%s", p.seq, k.id()), msgs: make(chan runMsg, 1024), tail: newTailBuffer(4096), startedAt: time.Now()}
	p.starts[k.String()]++
	if old, ok := p.workers[k.String()]; ok {
		p.discard(old)
	}
	p.workers[k.String()] = w
	base := filepath.Join(p.outDir, WorkersDir, w.runID)
	var files []*rawFile
	for _, ext := range []string{".events.jsonl", ".log"} {
		f, err := os.Create(base + ext)
		if err != nil {
			w.err = &workerError{reason: fmt.Sprintf("%s: raw file: %v", k.m, err)}
			for _, f := range files {
				f.close()
			}
			return w
		}
		files = append(files, &rawFile{f: f})
	}
	w.own = files
	w.raw, w.log = &switchWriter{w: files[0]}, &switchWriter{w: files[1]}
	mpsDir := ""
	if k.mode == string(profile.MPS) {
		mpsDir = p.mpsDir
	}
	spec := workloadSpec(c, k.m, w.runID, p.token+"/w/"+w.runID, p.dir, mpsDir, p.gpus)
	spec.Args = append(spec.Args, "--serve")
	fmt.Fprintf(w.log, "# %s\n", strings.Join(append(slices.Clone(spec.Program), spec.Args...), " "))
	proc, err := p.backend.Start(ctx, spec)
	if err != nil {
		fmt.Fprintf(w.log, "# start failed: %v\n", err)
		w.err = &workerError{reason: fmt.Sprintf("%s: cannot start: %v", k.m, err)}
		return w
	}
	w.proc = proc
	stdoutDone, stderrDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stdoutDone)
		ps := NewParser(proc.Stdout())
		ps.Log, ps.Raw = prefixWriter{"[stdout] ", w.log}, w.raw
		for {
			ev, err := ps.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				w.msgs <- runMsg{kind: msgProtoErr, err: err}
				io.Copy(w.log, proc.Stdout())
				return
			}
			w.msgs <- runMsg{kind: msgEvent, ev: ev}
		}
	}()
	go func() {
		defer close(stderrDone)
		io.Copy(io.MultiWriter(w.log, w.tail), proc.Stderr())
	}()
	go func() {
		exit, err := proc.Wait()
		t := time.NewTimer(5 * time.Second)
		select {
		case <-stdoutDone:
		case <-t.C:
			proc.Close()
			<-stdoutDone
		}
		<-stderrDone
		t.Stop()
		fmt.Fprintf(w.log, "# %s\n", exit)
		w.msgs <- runMsg{kind: msgExit, exit: exit, err: err}
	}()
	return w
}

// await waits outside any run for w's event want ("loaded" or "ready"), the start event
// before it, for at most timeouts.ready from since; anything else makes w unusable.
func (p *warmPool) await(ctx context.Context, w *worker, want string, since time.Time) {
	if w.err != nil {
		return
	}
	limit := p.c.Timeouts.Ready.D()
	timer := time.NewTimer(time.Until(since.Add(limit)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			p.fail(w, fmt.Sprintf("%s: cancelled before %s", w.key.m, want), false)
			return
		case <-timer.C:
			p.fail(w, fmt.Sprintf("hang: %s not %s within %s", w.key.m, want, p.c.Timeouts.Ready), false)
			return
		case m := <-w.msgs:
			switch m.kind {
			case msgExit:
				w.exited, w.exit = true, m.exit
				what := fmt.Sprintf("%s exited before %s: %s", w.key.m, want, m.exit)
				oom := m.exit.Code == ExitOOM
				if oom {
					what = fmt.Sprintf("out of memory before %s (%s, exit code 3)", want, w.key.m)
				}
				if w.err == nil {
					w.err = &workerError{reason: what, oom: oom, tail: strings.TrimSpace(w.tail.String())}
				}
				return
			case msgProtoErr:
				p.fail(w, fmt.Sprintf("malformed protocol stream: %v", m.err), false)
			case msgEvent:
				ev := m.ev
				switch {
				case ev.Event == EventOOM:
					phase := "build"
					if want == EventReady {
						phase = "warmup"
					}
					p.fail(w, fmt.Sprintf("out of memory in %s (%s)", firstNonEmpty(ev.Phase, phase), w.key.m), true)
				case ev.Event == EventStart && w.start == nil:
					w.start = &ev
				case ev.Event == want && want == EventLoaded:
					w.loaded, w.loadS = &ev, time.Since(w.startedAt).Seconds()
					return
				case ev.Event == want:
					w.ready = &ev
					return
				default:
					p.fail(w, fmt.Sprintf("protocol: %q event while waiting for %s", ev.Event, want), false)
				}
			}
		}
	}
}

// warm runs w's warm-up alone and waits for its ready.
func (p *warmPool) warm(ctx context.Context, w *worker) {
	w.send(CmdWarmup)
	p.await(ctx, w, EventReady, time.Now())
}

// retire stops the workers whose key keep rejects (quit, then SIGTERM and SIGKILL after the
// grace period) and waits for them; it returns how many it stopped.
func (p *warmPool) retire(keep func(string) bool) int {
	grace := p.c.Timeouts.Grace.D()
	var gone []*worker
	for k, w := range p.workers {
		if keep(k) {
			continue
		}
		delete(p.workers, k)
		gone = append(gone, w)
		if w.proc != nil && !w.exited {
			w.send(CmdQuit)
			w.proc.Stdin().Close()
		}
	}
	var wg sync.WaitGroup
	for _, w := range gone {
		wg.Go(func() {
			defer p.closeFiles(w)
			if w.proc == nil || w.exited {
				return
			}
			deadline := time.NewTimer(grace)
			defer deadline.Stop()
			killed := false
			for !w.exited {
				select {
				case m := <-w.msgs:
					if m.kind == msgExit {
						w.exited, w.exit = true, m.exit
					}
				case <-deadline.C:
					if killed {
						p.log.Error("a warm worker did not exit after SIGKILL; abandoning it", "worker", w.key.String())
						return
					}
					killed = true
					p.log.Warn("a warm worker did not exit after quit; terminating it", "worker", w.key.String(), "grace", grace)
					w.proc.Terminate(grace)
					deadline.Reset(2*grace + 30*time.Second)
				}
			}
			w.proc.Close()
		})
	}
	wg.Wait()
	return len(gone)
}

// closeFiles closes w's own raw files, logging an error (the runs' own files carry the
// measurements; these hold what lies between them).
func (p *warmPool) closeFiles(w *worker) {
	for _, f := range w.own {
		if err := f.close(); err != nil {
			p.log.Warn("a warm worker's raw file could not be written", "worker", w.key.String(), "err", err)
		}
	}
	w.own = nil
}

// close stops every worker, kills what still carries the pool's token and removes the scratch
// directory.
func (p *warmPool) close() {
	p.retire(func(string) bool { return false })
	if pids := killTokenProcs(p.token + "/w/"); len(pids) > 0 {
		p.log.Warn("warm worker processes escaped their process group; killed", "pids", pids)
	}
	os.RemoveAll(p.dir)
}

// executeWarm performs one run with warm workers: the same window, timing and integrity rules
// as execute, but the members are the pool's ready workers, so the run only sends "go" to
// all of them back to back, collects steps until every member meets the window rule (or
// max_seconds), sends "stop" and waits for each to report "idle". A worker that fails,
// hangs or exits during the window is terminated and replaced for the next run that needs it.
func (rc *runCtx) executeWarm(ctx context.Context, plan runPlan) (RunResult, error) {
	res := RunResult{Run: plan.name, Kind: plan.kind, Repeat: plan.repeat, Seq: plan.seq}
	c := rc.c
	grace := c.Timeouts.Grace.D()
	keys := workerKeys(rc.cell)
	if plan.kind == KindSolo {
		// The solo runs of a pair cell (reuse_solo: false) use the first worker of their side.
		keys = []workerKey{{cellMode(rc.cell), plan.members[0], 0}}
	}
	kids := make([]*child, len(plan.members))
	ws := make([]*worker, len(plan.members))
	for i := range plan.members {
		w, err := rc.pool.get(ctx, keys[i])
		if err != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("runner: cell %s: run %s: %w", rc.cell.Label, plan.name, context.Cause(ctx))
			}
			var we *workerError
			res.Status, res.Reason = StatusFailed, "warm worker: "+err.Error()
			if errors.As(err, &we) {
				res.StderrTail = we.tail
				if we.oom {
					res.Status, res.Reason = StatusInfeasible, we.reason
				}
			}
			return res, nil
		}
		ws[i] = w
		kids[i] = &child{role: plan.roles[i], plan: plan.name, m: plan.members[i], runID: w.runID, tail: w.tail,
			start: w.start, ready: w.ready, started: true}
	}
	var runFiles []*rawFile
	closeRunFiles := func() error {
		for _, w := range ws {
			if w.raw != nil && len(w.own) == 2 {
				w.raw.set(w.own[0])
				w.log.set(w.own[1])
			}
		}
		var err error
		for _, f := range runFiles {
			err = cmpOrErr(err, f.close())
		}
		return err
	}
	for i, w := range ws {
		base := plan.name + "-" + plan.roles[i]
		raw, err := rc.create(base+".events.jsonl", &res)
		if err != nil {
			closeRunFiles()
			res.Status, res.Reason = StatusFailed, fmt.Sprintf("writing raw files: %v", err)
			return res, nil
		}
		runFiles = append(runFiles, raw)
		logf, err := rc.create(base+".log", &res)
		if err != nil {
			closeRunFiles()
			res.Status, res.Reason = StatusFailed, fmt.Sprintf("writing raw files: %v", err)
			return res, nil
		}
		runFiles = append(runFiles, logf)
		w.windows++
		fmt.Fprintf(logf, "# warm worker %s (pid %d, %s): window %d\n", w.key, w.pid(), w.runID, w.windows)
		w.raw.set(raw)
		w.log.set(logf)
	}

	var (
		phase                 = phaseMeasure
		goAt, stopAt, killAt  time.Time
		failure, failRole     string
		infeasible, cancelled bool
		abandoned, slowNoted  bool
		tcancel               context.CancelFunc
		tdone                 chan gpu.Summary
		tfile                 *rawFile
	)
	idle := make([]bool, len(ws))
	pending := len(ws)
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
		for i, k := range kids {
			if !idle[i] && !k.exited && !k.stopSent {
				k.stopSent = true
				ws[i].send(CmdStop)
			}
		}
	}
	terminate := func(i int) {
		if !kids[i].exited && !kids[i].terminated {
			kids[i].terminated = true
			rc.pool.kill(ws[i])
			killAt = time.Now()
		}
	}
	terminateAll := func() {
		stopAll()
		for i := range kids {
			if !idle[i] {
				terminate(i)
			}
		}
	}

	goAt = time.Now()
	for i, w := range ws {
		w.send(CmdGo)
		kids[i].lastStep = goAt
	}
	if rc.sampler != nil && rc.sampler.Name() != gpu.SourceNone {
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		tcancel = cancel
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

	handle := func(i int, m runMsg) {
		k, w := kids[i], ws[i]
		switch m.kind {
		case msgEvent:
			ev := m.ev
			switch ev.Event {
			case EventStep:
				k.steps = append(k.steps, Step{T0Ns: ev.T0Ns, T1Ns: ev.T1Ns, StepMs: ev.StepMs, Samples: ev.Samples})
				k.lastStep = time.Now()
				if phase == phaseMeasure && WindowSatisfied(stepsOf(kids), c.Window) {
					stopAll()
				}
			case EventMem:
				k.mem = &ev
			case EventIdle:
				idle[i] = true
				pending--
				if phase == phaseMeasure {
					stopAll() // it reached its step cap: end the run for everyone
				}
			case EventOOM:
				k.oom = &ev
				if !infeasible {
					infeasible = true
					res.Phase = ev.Phase
					failure, failRole = fmt.Sprintf("out of memory in %s (%s)", ev.Phase, k.m), k.role
				}
				w.dead = true // it exits with code 3; the next run that needs it gets a new one
				stopAll()
			default:
				fail(k, fmt.Sprintf("protocol: %q event during a window of a warm worker", ev.Event))
				terminate(i)
				stopAll()
			}
		case msgProtoErr:
			k.perr = m.err
			fail(k, fmt.Sprintf("malformed protocol stream: %v", m.err))
			terminate(i)
			stopAll()
		case msgExit:
			k.exited, k.exit = true, m.exit
			w.exited, w.exit, w.dead = true, m.exit, true
			if !idle[i] {
				pending--
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
					res.Notes = append(res.Notes, fmt.Sprintf("%s did not go idle within %s of stop and was terminated", k.role, grace))
				}
			default:
				fail(k, fmt.Sprintf("%s: the warm worker exited during the window: %s", k.m, m.exit))
				stopAll()
			}
		}
	}

	var chA, chB chan runMsg
	chA = ws[0].msgs
	if len(ws) > 1 {
		chB = ws[1].msgs
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	ctxDone := ctx.Done()
	for pending > 0 && !abandoned {
		select {
		case <-ctxDone:
			ctxDone = nil
			cancelled = true
			terminateAll()
		case m := <-chA:
			handle(0, m)
		case m := <-chB:
			handle(1, m)
		case now := <-tick.C:
			switch phase {
			case phaseMeasure:
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
				for i, k := range kids {
					if !idle[i] && !k.exited && now.Sub(k.lastStep) > c.Timeouts.Stall.D() {
						fail(k, fmt.Sprintf("hang: %s made no step for %s", k.m, c.Timeouts.Stall))
						terminateAll()
						break
					}
				}
			case phaseStop:
				if killAt.IsZero() && now.Sub(stopAt) > grace {
					for i := range kids {
						if !idle[i] {
							terminate(i)
						}
					}
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
	writeErr := closeRunFiles()
	if tfile != nil {
		writeErr = cmpOrErr(writeErr, tfile.close())
	}
	if abandoned {
		return res, fmt.Errorf("runner: cell %s: run %s: warm workers did not exit after SIGKILL", rc.cell.Label, plan.name)
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

// workerGroup is the group of cells whose warm workers are prepared together: under order
// levels a sharing mode's sub-batch level (its solo and pair cells), else the whole campaign.
func workerGroup(c *Campaign, cell Cell) string {
	if c.Order != OrderLevels {
		return "all"
	}
	mode := string(profile.Timeslice)
	if modeRank(cell) > 0 {
		mode = cell.Mode
	}
	return mode + " level " + strconv.Itoa(cell.Level)
}
