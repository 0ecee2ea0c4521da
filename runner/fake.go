package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sharebench/sharebench/runner/gpu"
)

// Environment variables through which the fake backend configures fake workloads.
const (
	EnvFakeConfig = "SHAREBENCH_FAKE_CONFIG" // FakeConfig as JSON
	EnvFakeDir    = "SHAREBENCH_FAKE_DIR"    // the run's shared directory: the fake "GPU"
	// EnvFakePIDFile receives the PID of the grandchild --inject escape starts.
	EnvFakePIDFile = "SHAREBENCH_FAKE_PIDFILE"
)

// FakeConfig parameterises the fake workload. Zero values take the documented defaults.
type FakeConfig struct {
	// StepMs is the solo time per optimizer step at sub_batch = batch, per model
	// (default DefaultStepMs, itself 20 ms by default).
	StepMs        map[string]float64 `yaml:"step_ms,omitempty" json:"step_ms,omitempty"`
	DefaultStepMs float64            `yaml:"default_step_ms,omitempty" json:"default_step_ms,omitempty"`
	// AccumOverhead is the extra relative cost per additional micro-step (default 0.05).
	AccumOverhead float64 `yaml:"accum_overhead,omitempty" json:"accum_overhead,omitempty"`
	// Jitter is the relative standard deviation of step times (default 0.02; negative: none).
	Jitter float64 `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// DrawnTimes makes each measured step report its drawn time (jitter and slowdown
	// included) as its duration, whatever the sleep really took: the step still sleeps, but
	// a test of the statistics reads the same values on an idle and on a loaded machine,
	// where sleeps stretch to the scheduler's tick and erase the jitter.
	DrawnTimes bool `yaml:"drawn_times,omitempty" json:"drawn_times,omitempty"`
	// Slowdown is the factor on a model's step time while another fake shares its "GPU":
	// key "a+b" for a next to b, or "a" for a next to anything (default DefaultSlowdown,
	// itself 1.6 by default).
	Slowdown        map[string]float64 `yaml:"slowdown,omitempty" json:"slowdown,omitempty"`
	DefaultSlowdown float64            `yaml:"default_slowdown,omitempty" json:"default_slowdown,omitempty"`
	// MemBytes is the memory a model reserves at sub_batch = batch (default 1 GiB); half of
	// it scales with sub_batch/batch.
	MemBytes map[string]int64 `yaml:"mem_bytes,omitempty" json:"mem_bytes,omitempty"`
	// GPUMemBytes is the fake GPU's capacity: a fake whose reservation would push the
	// co-located total above it reports oom in warm-up and exits 3 (0: unlimited).
	GPUMemBytes int64 `yaml:"gpu_mem_bytes,omitempty" json:"gpu_mem_bytes,omitempty"`
	// LaunchLog, when set, is a file each fake appends lines to: "<run-id> <model> start
	// <monotonic ns> <CUDA_VISIBLE_DEVICES> <CUDA_MPS_PIPE_DIRECTORY>" ("-" when unset) when it starts and the
	// same with "ready" when it is ready (tests check the launch order, the sequential warm-up
	// and the environment with it).
	LaunchLog string `yaml:"launch_log,omitempty" json:"launch_log,omitempty"`
}

func (f *FakeConfig) validate() error {
	nums := []float64{f.DefaultStepMs, f.AccumOverhead, f.Jitter, f.DefaultSlowdown}
	for _, k := range slices.Sorted(maps.Keys(f.StepMs)) {
		if !(f.StepMs[k] > 0) || !finite(f.StepMs[k]) {
			return fmt.Errorf("fake.step_ms.%s: want a positive number", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Slowdown)) {
		if !(f.Slowdown[k] > 0) || !finite(f.Slowdown[k]) {
			return fmt.Errorf("fake.slowdown.%s: want a positive number", k)
		}
	}
	if !finite(nums...) || f.DefaultStepMs < 0 || f.AccumOverhead < 0 || f.DefaultSlowdown < 0 {
		return errors.New("fake: default_step_ms, accum_overhead and default_slowdown must be finite and ≥ 0")
	}
	if f.GPUMemBytes < 0 {
		return errors.New("fake.gpu_mem_bytes: must not be negative")
	}
	return nil
}

func (f *FakeConfig) stepMs(model string, batch, sub int) float64 {
	base := cmpOr(f.StepMs[model], f.DefaultStepMs, 20)
	k := 1
	if sub > 0 && batch >= sub {
		k = batch / sub
	}
	return base * (1 + cmpOr(f.AccumOverhead, 0.05)*float64(k-1))
}

func (f *FakeConfig) slowdown(model, peer string) float64 {
	if v, ok := f.Slowdown[model+"+"+peer]; ok {
		return v
	}
	if v, ok := f.Slowdown[model]; ok {
		return v
	}
	return cmpOr(f.DefaultSlowdown, 1.6)
}

func (f *FakeConfig) memBytes(model string, batch, sub int) int64 {
	m := f.MemBytes[model]
	if m <= 0 {
		m = 1 << 30
	}
	if batch <= 0 || sub <= 0 {
		return m
	}
	return m/2 + int64(float64(m/2)*float64(sub)/float64(batch))
}

func cmpOr(xs ...float64) float64 {
	for _, x := range xs {
		if x != 0 {
			return x
		}
	}
	return 0
}

// Fake runs the fake workload (protocol v1 from Go) as a child process
// through Local, so orchestration tests exercise real processes and pipes without torch.
type Fake struct {
	// Command starts the fake workload; default [this executable, "internal", "fake-workload"].
	// Tests point it at the test binary.
	Command []string
	// Env is extra environment for every fake (tests use it to select the fake-workload mode
	// of the test binary).
	Env map[string]string
	// Config is passed to every fake through EnvFakeConfig.
	Config FakeConfig
	local  Local
}

// Name returns "fake".
func (f *Fake) Name() string { return BackendFake }

// Probe checks that the fake command exists.
func (f *Fake) Probe(context.Context) error {
	cmd, err := f.command()
	if err != nil {
		return err
	}
	if _, err := os.Stat(cmd[0]); err != nil {
		return fmt.Errorf("runner: fake backend: %w", err)
	}
	return nil
}

func (f *Fake) command() ([]string, error) {
	if len(f.Command) > 0 {
		return f.Command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("runner: fake backend: %w", err)
	}
	return []string{exe, "internal", "fake-workload"}, nil
}

// Start starts one fake workload; s.Program is ignored. Co-located fakes share s.RunDir.
func (f *Fake) Start(ctx context.Context, s Spec) (Process, error) {
	cmd, err := f.command()
	if err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(f.Config)
	if err != nil {
		return nil, fmt.Errorf("runner: fake backend: %w", err)
	}
	s.Program = slices.Clone(cmd)
	s.Env = maps.Clone(s.Env)
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	maps.Copy(s.Env, f.Env)
	s.Env[EnvFakeConfig] = string(cfg)
	s.Env[EnvFakeDir] = s.RunDir
	s.Isolate = false
	return f.local.Start(ctx, s)
}

// FakeWorkload is the fake workload's main function ("sharebench internal fake-workload"):
// it accepts train.py's flags and speaks protocol v1 on stdout and stdin, with seeded step
// times, a configurable slowdown while another fake shares its directory, and memory
// accounting against a fake capacity. --inject takes train.py's values (oom@build,
// oom@warmup, oom@measure, crash@N, hang) plus hang@warmup (no ready) and garbage@N (a
// malformed line instead of step N); injected hangs ignore SIGTERM. It returns the exit code.
func FakeWorkload(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("fake-workload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		model       = fs.String("model", "", "model key")
		batch       = fs.Int("batch", 32, "global batch")
		subBatch    = fs.Int("sub-batch", 0, "sub-batch (default: batch)")
		seqLen      = fs.Int("seq-len", 0, "sequence length (reported only)")
		imageSize   = fs.Int("image-size", 0, "image size (reported only)")
		device      = fs.String("device", "cuda", "cuda or cpu (reported only)")
		warmSteps   = fs.Int("warmup-steps", 20, "warm-up steps")
		warmSeconds = fs.Float64("warmup-seconds", 10, "warm-up seconds")
		maxSteps    = fs.Int("max-steps", 0, "step cap (0: none)")
		amp         = fs.String("amp", "off", "reported only")
		tf32        = fs.Bool("tf32", false, "reported only")
		precision   = fs.String("precision", "default", "reported only")
		gpus        = fs.Int("gpus", 1, "reported only (the fake job is one process)")
		threads     = fs.Int("threads", 2, "reported only")
		seed        = fs.Int64("seed", 1, "seed of the step-time jitter")
		runID       = fs.String("run-id", "", "run id")
		inject      = fs.String("inject", "", "failure to inject")
		serve       = fs.Bool("serve", false, "warm worker: warm-ups and windows on command until quit")
	)
	fs.String("impl", "auto", "ignored")
	fs.Bool("h2d", false, "ignored")
	fs.Bool("tiny", false, "ignored")
	fs.Bool("dry-run", false, "ignored (the fake never imports torch)")
	fs.Float64("mem-fraction", 0, "ignored")
	fs.Int("play-steps", 0, "ignored")
	fs.Int("rollout-length", 0, "ignored")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	sub := *subBatch
	if sub == 0 {
		sub = *batch
	}
	if *model == "" || *batch < 1 || sub < 1 || *batch%sub != 0 {
		fmt.Fprintln(stderr, "fake-workload: need --model, and --sub-batch dividing --batch")
		return ExitUsage
	}
	var cfg FakeConfig
	if s := getenv(EnvFakeConfig); s != "" {
		if err := json.Unmarshal([]byte(s), &cfg); err != nil {
			fmt.Fprintf(stderr, "fake-workload: %s: %v\n", EnvFakeConfig, err)
			return ExitUsage
		}
	}
	inj, err := parseInject(*inject)
	if err != nil {
		fmt.Fprintln(stderr, "fake-workload:", err)
		return ExitUsage
	}
	w := &fakeRun{
		cfg: cfg, dir: getenv(EnvFakeDir), model: *model, batch: *batch, sub: sub, stdout: stdout, stderr: stderr,
		rng: rand.NewPCG(uint64(*seed), SeedFor(*runID, *model)), pid: os.Getpid(),
	}
	launch := func(what string) {
		if cfg.LaunchLog != "" {
			appendLine(cfg.LaunchLog, fmt.Sprintf("%s %s %s %d %s %s", *runID, *model, what, gpu.MonotonicNs(), orDash(getenv("CUDA_VISIBLE_DEVICES")), orDash(getenv("CUDA_MPS_PIPE_DIRECTORY"))))
		}
	}
	launch("start")
	w.emit(Event{Event: EventStart, Run: *runID, Model: *model, Impl: "fake", Batch: *batch, SubBatch: sub,
		Accum: *batch / sub, GPUs: *gpus, SeqLen: *seqLen, ImageSize: *imageSize, AMP: *amp, TF32: *tf32 || *precision == "tf32",
		Precision: map[string]any{"mode": *precision}, Timing: "wall", CUDAVisible: getenv("CUDA_VISIBLE_DEVICES"),
		Device: map[bool]string{true: "cpu", false: "cuda:0"}[*device == "cpu"], GPU: "Fake GPU", Torch: "fake",
		PID: w.pid, Threads: *threads, Seed: *seed})
	if *serve {
		return w.serve(newServeReader(stdin), inj, *warmSteps, *warmSeconds, *maxSteps, launch, getenv(EnvFakePIDFile))
	}
	cmds := newCommandReader(stdin)
	if inj.kind == "oom" && inj.phase == "build" {
		return w.oom("build", "CUDA out of memory (fake: --inject oom@build)")
	}
	if inj.kind == "hang" && inj.phase == "warmup" {
		hangForever(stderr)
	}
	if inj.kind == "escape" {
		if err := escape(getenv(EnvFakePIDFile)); err != nil {
			fmt.Fprintln(stderr, "fake-workload: --inject escape:", err)
			return 1
		}
	}
	mem := cfg.memBytes(*model, *batch, sub)
	start := time.Now()
	steps := 0
	for steps < *warmSteps || time.Since(start).Seconds() < *warmSeconds {
		w.step(false)
		steps++
	}
	if inj.kind == "oom" && inj.phase == "warmup" {
		return w.oom("warmup", "CUDA out of memory (fake: --inject oom@warmup)")
	}
	if ok, used := w.reserve(mem); !ok {
		return w.oom("warmup", fmt.Sprintf("CUDA out of memory. Tried to allocate %d bytes (fake GPU: %d of %d bytes in use)", mem, used, cfg.GPUMemBytes))
	}
	defer w.release()
	launch("ready")
	w.emit(Event{Event: EventReady, WarmupSteps: steps, WarmupS: time.Since(start).Seconds(),
		MemAllocPeak: mem * 4 / 5, MemReservedPeak: mem, MemSource: "fake"})
	if inj.kind == "hang" && inj.phase == "" || inj.kind == "escape" && inj.phase == "hang" {
		hangForever(stderr)
	}
	cmds.waitGo()
	w.activate()
	n, exit := 0, "ok"
	for {
		if *maxSteps > 0 && n >= *maxSteps {
			exit = "cap"
			break
		}
		if cmds.stopped() {
			break
		}
		switch {
		case inj.kind == "oom" && inj.phase == "measure":
			return w.oom("measure", "CUDA out of memory (fake: --inject oom@measure)")
		case inj.kind == "crash" && inj.step == n:
			fmt.Fprintf(stderr, "Traceback (most recent call last):\n  File \"fake\", line 1, in measure\nInjectedCrash: injected crash at step %d (--inject crash@%d)\n", n, n)
			return 1
		case inj.kind == "garbage" && inj.step == n:
			fmt.Fprintf(stdout, "{\"v\":1,\"event\":\"step\",\"i\":%d,\"t0_ns\":\n", n)
		}
		t0, t1, micro := w.step(true)
		w.emit(Event{Event: EventStep, I: n, T0Ns: t0, T1Ns: t1, MicroMs: micro, StepMs: float64(t1-t0) / 1e6, Samples: *batch})
		n++
	}
	w.deactivate()
	w.emit(Event{Event: EventMem, MaxAllocated: mem * 4 / 5, MaxReserved: mem, MemSource: "fake"})
	w.emit(Event{Event: EventDone, Steps: n, Exit: exit})
	return ExitOK
}

// serve plays a warm worker (train.py --serve): loaded, then warm-ups (ready) and windows (steps,
// mem, idle) on command until quit or EOF (done). Memory is reserved on the fake GPU at the first
// warm-up and held until exit, as a real worker's caching allocator holds it; the worker counts as
// active for its peers only during its windows. Injections fire as train.py's do: oom@warmup and
// hang@warmup in the first warm-up, hang after the first ready, oom@measure in the first window,
// crash@N and garbage@N at step N of any window.
func (w *fakeRun) serve(cmds *serveReader, inj injection, warmSteps int, warmSeconds float64, maxSteps int, launch func(string), pidFile string) int {
	if inj.kind == "oom" && inj.phase == "build" {
		return w.oom("build", "CUDA out of memory (fake: --inject oom@build)")
	}
	if inj.kind == "escape" {
		if err := escape(pidFile); err != nil {
			fmt.Fprintln(w.stderr, "fake-workload: --inject escape:", err)
			return 1
		}
	}
	w.emit(Event{Event: EventLoaded, BuildS: 0, Params: 1})
	mem := w.cfg.memBytes(w.model, w.batch, w.sub)
	total, windows, warmups := 0, 0, 0
	defer w.release()
	for {
		switch cmds.next() {
		case CmdQuit:
			w.emit(Event{Event: EventDone, Steps: total, Exit: "ok"})
			return ExitOK
		case CmdWarmup:
			first := warmups == 0
			warmups++
			if first && inj.kind == "hang" && inj.phase == "warmup" {
				hangForever(w.stderr)
			}
			start := time.Now()
			var durs []float64
			for len(durs) < warmSteps || time.Since(start).Seconds() < warmSeconds {
				t0, t1, _ := w.step(false)
				durs = append(durs, float64(t1-t0)/1e6)
			}
			if first && inj.kind == "oom" && inj.phase == "warmup" {
				return w.oom("warmup", "CUDA out of memory (fake: --inject oom@warmup)")
			}
			if w.reserved == "" {
				if ok, used := w.reserve(mem); !ok {
					return w.oom("warmup", fmt.Sprintf("CUDA out of memory. Tried to allocate %d bytes (fake GPU: %d of %d bytes in use)", mem, used, w.cfg.GPUMemBytes))
				}
			}
			launch("ready")
			stepMs := 0.0
			if len(durs) > 0 {
				stepMs = Median(durs[len(durs)/2:])
			}
			w.emit(Event{Event: EventReady, WarmupSteps: len(durs), WarmupS: time.Since(start).Seconds(),
				MemAllocPeak: mem * 4 / 5, MemReservedPeak: mem, MemSource: "fake", WarmupStepMs: stepMs})
			if first && inj.kind == "hang" && inj.phase == "" {
				hangForever(w.stderr)
			}
		case CmdGo:
			first := windows == 0
			windows++
			cmds.beginWindow()
			w.activate()
			n, exit := 0, "ok"
			for {
				if maxSteps > 0 && n >= maxSteps {
					exit = "cap"
					break
				}
				if cmds.stopped() {
					break
				}
				switch {
				case first && inj.kind == "oom" && inj.phase == "measure":
					w.deactivate()
					return w.oom("measure", "CUDA out of memory (fake: --inject oom@measure)")
				case inj.kind == "crash" && inj.step == n:
					fmt.Fprintf(w.stderr, "Traceback (most recent call last):\n  File \"fake\", line 1, in measure\nInjectedCrash: injected crash at step %d (--inject crash@%d)\n", n, n)
					w.deactivate()
					return 1
				case inj.kind == "garbage" && inj.step == n:
					fmt.Fprintf(w.stdout, "{\"v\":1,\"event\":\"step\",\"i\":%d,\"t0_ns\":\n", n)
				}
				t0, t1, micro := w.step(true)
				w.emit(Event{Event: EventStep, I: n, T0Ns: t0, T1Ns: t1, MicroMs: micro, StepMs: float64(t1-t0) / 1e6, Samples: w.batch})
				n++
			}
			w.deactivate()
			total += n
			w.emit(Event{Event: EventMem, MaxAllocated: mem * 4 / 5, MaxReserved: mem, MemSource: "fake"})
			w.emit(Event{Event: EventIdle, Steps: n, Exit: exit})
			if cmds.quitting() {
				w.emit(Event{Event: EventDone, Steps: total, Exit: "ok"})
				return ExitOK
			}
		}
	}
}

// serveReader queues a warm worker's commands in arrival order (EOF is quit), so that a stop
// sent right after go ends that window whatever the timing.
type serveReader struct {
	ch     chan string
	mu     sync.Mutex
	halted bool // the current window got stop or quit
	quit   bool // quit (or EOF) arrived during a window
}

func newServeReader(r io.Reader) *serveReader {
	c := &serveReader{ch: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			switch cmd := strings.TrimSpace(sc.Text()); cmd {
			case CmdGo, CmdStop, CmdWarmup, CmdQuit:
				c.ch <- cmd
			}
		}
		c.ch <- CmdQuit
	}()
	return c
}

// next blocks for the next command between windows; a stop there is late and skipped.
func (c *serveReader) next() string {
	if c.quitting() {
		return CmdQuit
	}
	for cmd := range c.ch {
		if cmd != CmdStop {
			return cmd
		}
	}
	return CmdQuit
}

func (c *serveReader) beginWindow() {
	c.mu.Lock()
	c.halted = false
	c.mu.Unlock()
}

// stopped reports whether the current window must end, taking queued commands.
func (c *serveReader) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.halted {
		select {
		case cmd := <-c.ch:
			if cmd == CmdStop || cmd == CmdQuit {
				c.halted = true
				c.quit = c.quit || cmd == CmdQuit
			}
		default:
			return false
		}
	}
	return true
}

func (c *serveReader) quitting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quit
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// injection is a parsed --inject value.
type injection struct {
	kind, phase string
	step        int
}

func parseInject(s string) (injection, error) {
	if s == "" {
		return injection{}, nil
	}
	if s == "hang" || s == "escape" {
		return injection{kind: s}, nil
	}
	kind, arg, _ := strings.Cut(s, "@")
	switch kind {
	case "oom":
		if arg == "build" || arg == "warmup" || arg == "measure" {
			return injection{kind: kind, phase: arg}, nil
		}
	case "hang":
		if arg == "warmup" {
			return injection{kind: kind, phase: arg}, nil
		}
	case "escape":
		if arg == "hang" {
			return injection{kind: kind, phase: arg}, nil
		}
	case "crash", "garbage":
		if n, err := strconv.Atoi(arg); err == nil && n >= 0 {
			return injection{kind: kind, step: n}, nil
		}
	}
	return injection{}, fmt.Errorf("--inject %q: want oom@build|oom@warmup|oom@measure|crash@N|garbage@N|hang|hang@warmup|escape|escape@hang", s)
}

// escape starts a grandchild that leaves the process group (setsid) and sleeps, as a
// workload's helper that daemonises would, and writes its PID to pidFile (when set).
func escape(pidFile string) error {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if pidFile != "" {
		return os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	}
	return nil
}

// hangForever stops responding until SIGKILL: SIGTERM is ignored, stdin is not read.
func hangForever(stderr io.Writer) {
	signal.Ignore(syscall.SIGTERM)
	fmt.Fprintln(stderr, "fake-workload: injected hang")
	select {}
}

// fakeRun is the state of one fake workload process.
type fakeRun struct {
	cfg              FakeConfig
	dir              string
	model            string
	batch, sub, pid  int
	stdout, stderr   io.Writer
	rng              *rand.PCG
	line             []byte
	reserved, active string
}

func (w *fakeRun) emit(e Event) {
	w.line = AppendLine(w.line[:0], e)
	w.stdout.Write(w.line)
}

func (w *fakeRun) oom(phase, msg string) int {
	fmt.Fprintln(w.stderr, "torch.OutOfMemoryError:", msg)
	w.emit(Event{Event: EventOOM, Phase: phase, Msg: msg})
	return ExitOOM
}

// normal draws a standard normal variate from w.rng by Box–Muller on Uint64-derived uniforms.
func (w *fakeRun) normal() float64 {
	u1 := (float64(w.rng.Uint64()>>11) + 0.5) / (1 << 53)
	u2 := float64(w.rng.Uint64()>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// step sleeps one optimizer step: the model's time, jittered, slowed down while a peer is
// active in the shared directory.
func (w *fakeRun) step(measured bool) (t0, t1 int64, micro []float64) {
	ms := w.cfg.stepMs(w.model, w.batch, w.sub)
	if j := cmpOr(w.cfg.Jitter, 0.02); j > 0 {
		ms *= max(0.5, 1+j*w.normal())
	}
	if measured {
		if peer := w.peer(); peer != "" {
			ms *= w.cfg.slowdown(w.model, peer)
		}
	}
	t0 = gpu.MonotonicNs()
	time.Sleep(time.Duration(ms * float64(time.Millisecond)))
	t1 = gpu.MonotonicNs()
	if measured && w.cfg.DrawnTimes {
		t1 = t0 + int64(ms*float64(time.Millisecond))
	}
	k := w.batch / w.sub
	micro = make([]float64, k)
	for i := range micro {
		micro[i] = float64(t1-t0) / 1e6 / float64(k)
	}
	return t0, t1, micro
}

// peer returns the model of another active fake in the shared directory, or "".
func (w *fakeRun) peer() string {
	if w.dir == "" {
		return ""
	}
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return ""
	}
	own := "active." + strconv.Itoa(w.pid)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "active.") && e.Name() != own {
			b, err := os.ReadFile(filepath.Join(w.dir, e.Name()))
			if err == nil {
				return strings.TrimSpace(string(b))
			}
		}
	}
	return ""
}

func (w *fakeRun) activate() {
	if w.dir == "" {
		return
	}
	w.active = filepath.Join(w.dir, "active."+strconv.Itoa(w.pid))
	_ = os.WriteFile(w.active, []byte(w.model), 0o644)
}

func (w *fakeRun) deactivate() {
	if w.active != "" {
		os.Remove(w.active)
	}
}

// reserve books mem bytes on the fake GPU under an exclusive lock on the shared directory.
// It fails when the capacity would be exceeded, returning the bytes already in use.
func (w *fakeRun) reserve(mem int64) (ok bool, used int64) {
	if w.dir == "" || w.cfg.GPUMemBytes <= 0 {
		return true, 0
	}
	unlock := lockDir(w.dir)
	defer unlock()
	ents, _ := os.ReadDir(w.dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "mem.") {
			b, err := os.ReadFile(filepath.Join(w.dir, e.Name()))
			if err == nil {
				n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				used += n
			}
		}
	}
	if used+mem > w.cfg.GPUMemBytes {
		return false, used
	}
	w.reserved = filepath.Join(w.dir, "mem."+strconv.Itoa(w.pid))
	_ = os.WriteFile(w.reserved, []byte(strconv.FormatInt(mem, 10)), 0o644)
	return true, used
}

func (w *fakeRun) release() {
	if w.reserved != "" {
		os.Remove(w.reserved)
	}
}

// appendLine appends one line to path (O_APPEND: concurrent fakes do not interleave lines).
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	f.Write([]byte(line + "\n"))
	f.Close()
}

// commandReader reads protocol commands from stdin on a goroutine. EOF counts as stop.
type commandReader struct {
	mu       sync.Mutex
	goCh     chan struct{}
	goOnce   sync.Once
	stopFlag bool
}

func newCommandReader(r io.Reader) *commandReader {
	c := &commandReader{goCh: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			switch strings.TrimSpace(sc.Text()) {
			case CmdGo:
				c.goOnce.Do(func() { close(c.goCh) })
			case CmdStop:
				c.stop()
			}
		}
		c.stop()
	}()
	return c
}

func (c *commandReader) stop() {
	c.mu.Lock()
	c.stopFlag = true
	c.mu.Unlock()
	c.goOnce.Do(func() { close(c.goCh) })
}

func (c *commandReader) stopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopFlag
}

func (c *commandReader) waitGo() { <-c.goCh }
