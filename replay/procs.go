package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// ProcConfig configures Procs.
type ProcConfig struct {
	// Backend starts the workload processes (runner.Local, a container backend, Srun, runner.Fake).
	Backend runner.Backend
	// Program is the workload's entry command ([python, train.py], or the command inside the
	// container); the fake backend replaces it.
	Program []string
	// Image and Mounts are for container backends.
	Image  string
	Mounts []runner.Mount
	// Device is "cuda" or "cpu". On cuda, Devices[g] is the CUDA device (index or UUID) of the
	// cluster's flat GPU index g, and a job's processes see its GPUs as CUDA_VISIBLE_DEVICES.
	Device  string
	Devices []string
	// Tiny shrinks models and inputs for CPU runs (train.py --tiny).
	Tiny bool
	// Threads is train.py --threads and OMP_NUM_THREADS (default 2).
	Threads int
	// Seed is train.py --seed.
	Seed int64
	// Args are extra workload arguments; Env extra environment.
	Args []string
	Env  map[string]string
	// Dir receives the raw step logs (job<ID>-a<attempt>.events.jsonl and .log).
	Dir string
	// ModelMap maps trace models onto the models the workload runs (those of the profile).
	ModelMap *profile.ModelMap
	// Grace is how long a stopped process may take to exit before it is killed (default 30s);
	// Ready bounds a launch until the first step (default 10m); Stall the gap between two
	// steps (default 5m).
	Grace, Ready, Stall time.Duration
	// Progress, when set, receives a line per launch, stop and exit.
	Progress io.Writer
}

// Procs is the world of real workload processes: each placement launches one process (its
// ranks are the workload's business) that runs the job's remaining iterations with --max-steps,
// released at once after start-up (no warm-up: every step counts); a stop sends "stop", which
// ends the process after the step in progress. Time is the wall clock since Begin; a job
// finishes when its process exits after its last iteration.
type Procs struct {
	cfg   ProcConfig
	t0    time.Time
	live  *sim.Live
	mu    sync.Mutex
	jobs  map[trace.JobID]*pjob
	done  []exitRec // completions not yet reported, in time order
	fail  error
	wake  chan struct{}
	last  time.Duration
	segs  []*Segment
	atts  []*Attempt
	wg    sync.WaitGroup
	token string
	// scratch holds a directory per GPU, the processes' Spec.RunDir: co-located fake
	// workloads find each other there.
	scratch string
}

type pjob struct {
	j     *policy.Job
	done  int64 // iterations completed over all attempts
	cur   *attempt
	tries int
}

type exitRec struct {
	t  time.Duration
	id trace.JobID
}

// attempt is one process of a job.
type attempt struct {
	Attempt
	pj       *pjob
	proc     runner.Process
	stopping bool
	active   time.Duration // last sign of life (launch, step)
	gone     chan struct{}
	seg      *Segment
	tail     *tailBuf
}

// Attempt is one launch of a job: a row of attempts.csv.
type Attempt struct {
	Job      trace.JobID
	N        int // 1 for the first launch
	Model    string
	Batch    int
	SubBatch int
	GPUs     []string
	Target   int64 // iterations asked for (--max-steps)
	Steps    int64 // iterations completed
	// Launch is when the process was started, First when its first step ended (-1: none), End
	// when it had exited.
	Launch, First, End time.Duration
	Exit               string
	Stopped            bool // ended by a stop (preemption), not by running out of iterations
}

// Segment is a stretch of one attempt with one set of partners: a row of segments.csv.
type Segment struct {
	Job        trace.JobID
	Attempt    int
	Start, End time.Duration
	SubBatch   int
	Partners   []trace.JobID
	Steps      int64
	StepSum    float64 // seconds
	// ProfileStep is the step time the engine assumes here (exclusive time × ξ), Xi its ξ.
	ProfileStep time.Duration
	Xi          float64
}

// NewProcs returns the world of processes cfg describes.
func NewProcs(cfg ProcConfig) (*Procs, error) {
	if cfg.Backend == nil || cfg.Dir == "" {
		return nil, errors.New("replay: the process world needs a backend and a directory")
	}
	if cfg.Device != "cuda" && cfg.Device != "cpu" {
		return nil, fmt.Errorf("replay: device %q: want cuda or cpu", cfg.Device)
	}
	cfg.Threads = cmpOr(cfg.Threads, 2)
	cfg.Grace = cmpOr(cfg.Grace, 30*time.Second)
	cfg.Ready = cmpOr(cfg.Ready, 10*time.Minute)
	cfg.Stall = cmpOr(cfg.Stall, 5*time.Minute)
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return &Procs{cfg: cfg, jobs: map[trace.JobID]*pjob{}, wake: make(chan struct{}, 1),
		token: fmt.Sprintf("replay%016x", runner.SeedFor("replay", cfg.Dir))}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Begin starts the clock.
func (p *Procs) Begin(l *sim.Live) error {
	if p.cfg.Device == "cuda" && len(p.cfg.Devices) == 0 {
		return errors.New("replay: no CUDA devices given")
	}
	if err := p.cfg.Backend.Probe(context.Background()); err != nil {
		return fmt.Errorf("replay: backend %s: %w", p.cfg.Backend.Name(), err)
	}
	dir, err := os.MkdirTemp("", "sharebench-replay-")
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	p.live, p.scratch = l, dir
	p.t0 = time.Now()
	return nil
}

func (p *Procs) now() time.Duration { return time.Since(p.t0) }

// Start launches job j's remaining iterations on gpus at option opt.
func (p *Procs) Start(ctx context.Context, j *policy.Job, gpus []int, opt int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pj := p.jobs[j.ID]
	if pj == nil {
		pj = &pjob{j: j}
		p.jobs[j.ID] = pj
	}
	if pj.cur != nil {
		return fmt.Errorf("replay: job %d started while its process runs", j.ID)
	}
	pj.tries++
	o := j.Options[opt]
	model, _ := p.cfg.ModelMap.Resolve(j.Model, j.Batch)
	a := &attempt{pj: pj, gone: make(chan struct{}), tail: &tailBuf{max: 4000}}
	a.Attempt = Attempt{Job: j.ID, N: pj.tries, Model: model, Batch: o.Batch, SubBatch: o.SubBatch,
		Target: j.Iters - pj.done, Launch: p.now(), First: -1, End: -1}
	for _, g := range gpus {
		if p.cfg.Device == "cuda" {
			if g >= len(p.cfg.Devices) {
				return fmt.Errorf("replay: GPU %d has no device (%d given)", g, len(p.cfg.Devices))
			}
			a.GPUs = append(a.GPUs, p.cfg.Devices[g])
		} else {
			a.GPUs = append(a.GPUs, strconv.Itoa(g))
		}
	}
	p.atts = append(p.atts, &a.Attempt)
	pj.cur = a
	a.active = a.Launch
	if a.Target <= 0 {
		// Its last iteration ended while the stop that preempted it was under way.
		a.Steps, a.End, a.Exit = 0, a.Launch, "nothing left"
		close(a.gone)
		pj.cur = nil
		p.complete(j.ID, a.Launch)
		return nil
	}
	if err := p.launch(ctx, a, gpus); err != nil {
		pj.cur = nil
		close(a.gone)
		return err
	}
	p.progress("%s start job %d (%s %d/%d) on GPU %s, %d iterations, attempt %d", fmtT(a.Launch), j.ID, model, o.Batch, o.SubBatch,
		strings.Join(a.GPUs, ","), a.Target, a.N)
	return nil
}

// launch starts a's process and the goroutines that read it. Called with p.mu held.
func (p *Procs) launch(ctx context.Context, a *attempt, gpus []int) error {
	c := p.cfg
	base := fmt.Sprintf("job%d-a%d", a.Job, a.N)
	events, err := os.Create(filepath.Join(c.Dir, base+".events.jsonl"))
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	logf, err := os.Create(filepath.Join(c.Dir, base+".log"))
	if err != nil {
		events.Close()
		return fmt.Errorf("replay: %w", err)
	}
	scratch := filepath.Join(p.scratch, "gpu"+strconv.Itoa(gpus[0]))
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		events.Close()
		logf.Close()
		return fmt.Errorf("replay: %w", err)
	}
	threads := strconv.Itoa(c.Threads)
	env := map[string]string{"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "HF_HUB_OFFLINE": "1",
		runner.EnvToken: p.token + "/" + base}
	maps.Copy(env, c.Env)
	args := []string{"--model", a.Model, "--sub-batch", strconv.Itoa(a.SubBatch), "--device", c.Device,
		"--warmup-steps", "0", "--warmup-seconds", "0", "--max-steps", strconv.FormatInt(a.Target, 10),
		"--threads", threads, "--seed", strconv.FormatInt(c.Seed, 10), "--run-id", base}
	if a.Batch > 0 {
		args = append(args, "--batch", strconv.Itoa(a.Batch))
	}
	if n := len(gpus); n > 1 {
		args = append(args, "--gpus", strconv.Itoa(n))
	}
	if c.Tiny {
		args = append(args, "--tiny")
	}
	args = append(args, c.Args...)
	spec := runner.Spec{Name: "sbr-" + base + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36), Program: c.Program, Args: args,
		Env: env, Image: c.Image, Mounts: c.Mounts, RunDir: scratch}
	if c.Device == "cuda" {
		spec.GPUs = a.GPUs
	}
	fmt.Fprintf(logf, "# %s\n", strings.Join(append(slices.Clone(spec.Program), spec.Args...), " "))
	proc, err := c.Backend.Start(ctx, spec)
	if err != nil {
		fmt.Fprintf(logf, "# start failed: %v\n", err)
		events.Close()
		logf.Close()
		return fmt.Errorf("replay: job %d: cannot start its workload: %w", a.Job, err)
	}
	a.proc = proc
	p.wg.Add(1)
	go p.watch(a, events, logf)
	return nil
}

// watch reads a's protocol stream and log, releases it when ready, counts its steps and
// records how it ended.
func (p *Procs) watch(a *attempt, events, logf *os.File) {
	defer p.wg.Done()
	proc := a.proc
	var logMu sync.Mutex
	logw := lockedWriter{&logMu, logf}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		io.Copy(io.MultiWriter(logw, a.tail), proc.Stderr())
	}()
	parser := runner.NewParser(proc.Stdout())
	parser.Log, parser.Raw = logw, events
	var protoErr error
	oom := ""
	for {
		ev, err := parser.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			protoErr = err
			proc.Terminate(p.cfg.Grace)
			io.Copy(io.Discard, proc.Stdout())
			break
		}
		switch ev.Event {
		case runner.EventReady:
			io.WriteString(proc.Stdin(), runner.CmdGo+"\n")
		case runner.EventStep:
			p.step(a, ev.StepMs/1000)
		case runner.EventOOM:
			oom = ev.Msg
		}
	}
	exit, werr := proc.Wait()
	<-stderrDone
	proc.Close()
	fmt.Fprintf(logw, "# %s\n", exit)
	events.Close()
	logf.Close()
	p.exited(a, exit, cmpErr(werr, protoErr), oom)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// step counts one completed iteration of a.
func (p *Procs) step(a *attempt, stepS float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	a.Steps++
	a.pj.done++
	a.active = now
	if a.First < 0 {
		a.First = now
	}
	if a.seg != nil {
		a.seg.Steps++
		a.seg.StepSum += stepS
	}
}

// exited records how a's process ended: a stop, the end of its iterations, or a failure.
func (p *Procs) exited(a *attempt, exit runner.Exit, err error, oom string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	a.End, a.Exit = now, exit.String()
	p.closeSeg(a, now)
	defer close(a.gone)
	switch {
	case a.stopping:
		a.Stopped = true
		p.progress("%s job %d stopped after %d of its %d iterations (%s)", fmtT(now), a.Job, a.pj.done, a.pj.j.Iters, exit)
		return
	case err == nil && oom == "" && exit.Code == runner.ExitOK && a.Steps == a.Target:
		a.pj.cur = nil
		p.complete(a.Job, now)
		p.progress("%s job %d finished (attempt %d)", fmtT(now), a.Job, a.N)
		return
	}
	why := exit.String()
	switch {
	case oom != "":
		why = "out of memory: " + oom
	case err != nil:
		why = err.Error()
	case exit.Code == runner.ExitOK:
		why = fmt.Sprintf("exited after %d of %d iterations", a.Steps, a.Target)
	}
	if p.fail == nil {
		p.fail = fmt.Errorf("replay: job %d (attempt %d, %s): %s; stderr: %s", a.Job, a.N, a.Model, why, lastLines(a.tail.String(), 3))
	}
	p.signal()
}

// complete queues job id's completion at t for Wait. Called with p.mu held.
func (p *Procs) complete(id trace.JobID, t time.Duration) {
	p.done = append(p.done, exitRec{t, id})
	slices.SortStableFunc(p.done, func(a, b exitRec) int { return int(a.t - b.t) })
	p.signal()
}

func (p *Procs) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop sends "stop" to job id's process and waits until it is gone (killing it after the
// grace period); it returns the iterations the job has left.
func (p *Procs) Stop(ctx context.Context, id trace.JobID) (float64, error) {
	p.mu.Lock()
	pj := p.jobs[id]
	if pj == nil {
		p.mu.Unlock()
		return 0, fmt.Errorf("replay: stop of job %d, which never started", id)
	}
	a := pj.cur
	if a == nil {
		// It finished before the stop: take its completion back, it is the engine's to restart.
		p.done = slices.DeleteFunc(p.done, func(r exitRec) bool { return r.id == id })
		rem := float64(pj.j.Iters - pj.done)
		p.mu.Unlock()
		return rem, nil
	}
	a.stopping = true
	p.mu.Unlock()
	io.WriteString(a.proc.Stdin(), runner.CmdStop+"\n")
	t := time.NewTimer(p.cfg.Grace)
	defer t.Stop()
	select {
	case <-a.gone:
	case <-t.C:
		a.proc.Terminate(5 * time.Second)
		<-a.gone
	case <-ctx.Done():
		a.proc.Terminate(5 * time.Second)
		<-a.gone
		return 0, fmt.Errorf("replay: %w", ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pj.cur = nil
	return float64(pj.j.Iters - pj.done), nil
}

// Remaining returns the iterations job id has left by its step reports.
func (p *Procs) Remaining(id trace.JobID) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	pj := p.jobs[id]
	if pj == nil {
		return 0
	}
	return float64(max(0, pj.j.Iters-pj.done))
}

// Wait returns the earliest unreported completion if it comes no later than until, else waits
// for one or for the wall clock to reach until. It fails when a workload failed, hung or
// stalled.
func (p *Procs) Wait(ctx context.Context, until time.Duration, ok bool) (time.Duration, []trace.JobID, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		p.mu.Lock()
		if p.fail == nil {
			p.checkStalls()
		}
		if err := p.fail; err != nil {
			p.mu.Unlock()
			return 0, nil, err
		}
		now := p.now()
		if len(p.done) > 0 && (!ok || p.done[0].t <= until) {
			t := max(p.done[0].t, p.last)
			var ids []trace.JobID
			for len(p.done) > 0 && p.done[0].t <= t {
				ids = append(ids, p.done[0].id)
				p.done = p.done[1:]
			}
			p.last = t
			p.mu.Unlock()
			slices.Sort(ids)
			return t, ids, nil
		}
		running := slices.ContainsFunc(slices.Collect(maps.Values(p.jobs)), func(pj *pjob) bool { return pj.cur != nil })
		if ok && now >= until || !ok && !running {
			t := max(p.last, now)
			if ok {
				t = max(p.last, until)
			}
			p.last = t
			p.mu.Unlock()
			return t, nil, nil
		}
		p.mu.Unlock()
		var timer <-chan time.Time
		var tm *time.Timer
		if ok {
			tm = time.NewTimer(until - now)
			timer = tm.C
		}
		select {
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("replay: %w", ctx.Err())
		case <-p.wake:
		case <-timer:
		case <-tick.C:
		}
		if tm != nil {
			tm.Stop()
		}
	}
}

// checkStalls fails the replay when a process has not started stepping within the ready
// timeout, or has stopped stepping for the stall timeout. Called with p.mu held.
func (p *Procs) checkStalls() {
	now := p.now()
	for _, id := range slices.Sorted(maps.Keys(p.jobs)) {
		a := p.jobs[id].cur
		if a == nil || a.stopping {
			continue
		}
		limit, what := p.cfg.Stall, "no step for"
		if a.First < 0 {
			limit, what = p.cfg.Ready, "no first step within"
		}
		if now-a.active > limit {
			p.fail = fmt.Errorf("replay: job %d (attempt %d, %s): %s %s; stderr: %s", id, a.N, a.Model, what, limit, lastLines(a.tail.String(), 3))
			return
		}
	}
}

// Mark starts a new measurement segment of running job id when its partners changed.
func (p *Procs) Mark(id trace.JobID, partners []trace.JobID, profileStep time.Duration, xi float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pj := p.jobs[id]
	if pj == nil || pj.cur == nil {
		return
	}
	a := pj.cur
	now := p.now()
	p.closeSeg(a, now)
	a.seg = &Segment{Job: id, Attempt: a.N, Start: now, End: -1, SubBatch: a.SubBatch, Partners: slices.Clone(partners),
		ProfileStep: profileStep, Xi: xi}
	p.segs = append(p.segs, a.seg)
}

func (p *Procs) closeSeg(a *attempt, now time.Duration) {
	if a.seg != nil && a.seg.End < 0 {
		a.seg.End = now
	}
	a.seg = nil
}

// Close terminates every process still running and waits for them.
func (p *Procs) Close() error {
	p.mu.Lock()
	for _, pj := range p.jobs {
		if a := pj.cur; a != nil && a.proc != nil {
			a.stopping = true
			a.proc.Terminate(min(5*time.Second, p.cfg.Grace))
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.scratch != "" {
		return os.RemoveAll(p.scratch)
	}
	return nil
}

// Attempts returns every launch, in launch order (after Close).
func (p *Procs) Attempts() []Attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Attempt, len(p.atts))
	for i, a := range p.atts {
		out[i] = *a
	}
	return out
}

// Segments returns the measurement segments that saw at least one step, in order.
func (p *Procs) Segments() []Segment {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Segment
	for _, s := range p.segs {
		if s.Steps > 0 {
			out = append(out, *s)
		}
	}
	return out
}

func (p *Procs) progress(format string, a ...any) {
	if p.cfg.Progress != nil {
		fmt.Fprintf(p.cfg.Progress, format+"\n", a...)
	}
}

func fmtT(d time.Duration) string { return fmt.Sprintf("[%8.1f s]", d.Seconds()) }

// tailBuf keeps the last max bytes written to it.
type tailBuf struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuf) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuf) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLines returns the last n non-empty lines of s joined with " | ".
func lastLines(s string, n int) string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	if len(ls) == 0 {
		return "(empty)"
	}
	return strings.Join(ls, " | ")
}
