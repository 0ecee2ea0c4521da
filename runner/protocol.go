package runner

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// ProtocolVersion is the workload protocol version this runner speaks.
const ProtocolVersion = 1

// MaxLineBytes bounds one protocol line (long micro_ms arrays need more than bufio's 64 KiB).
const MaxLineBytes = 1 << 20

// Protocol event names.
const (
	EventStart = "start" // after argument parsing
	EventReady = "ready" // after warm-up; the child then waits for "go"
	EventStep  = "step"  // after every optimizer step following "go"
	EventMem   = "mem"   // memory peaks, after "stop" or the step cap
	EventDone  = "done"  // last line of a clean exit
	EventOOM   = "oom"   // CUDA out of memory in any phase; the child exits with ExitOOM
	// A warm worker (--serve) reports "loaded" once its model is built and then waits for
	// commands; after each measurement window it reports "mem" and "idle" and waits again.
	EventLoaded = "loaded"
	EventIdle   = "idle"
)

// Commands the parent writes to a child's stdin, one per line. EOF on stdin counts as stop
// (and as quit for a warm worker).
const (
	CmdGo   = "go"
	CmdStop = "stop"
	// CmdWarmup (warm workers) runs a warm-up that ends with "ready"; CmdQuit ends the worker
	// with "done". For a warm worker, stop ends the current window only.
	CmdWarmup = "warmup"
	CmdQuit   = "quit"
)

// Workload exit codes. Any other code or a signal is a crash.
const (
	ExitOK    = 0
	ExitUsage = 2
	ExitOOM   = 3
)

// Event is one protocol v1 line. It is flat: each event kind uses the fields listed in
// workloads/README.md and leaves the others zero. Unknown fields are ignored when parsing.
type Event struct {
	V     int    `json:"v"`
	Event string `json:"event"`

	// start
	Run       string `json:"run,omitempty"`
	Model     string `json:"model,omitempty"`
	Impl      string `json:"impl,omitempty"`
	Batch     int    `json:"batch,omitempty"`
	SubBatch  int    `json:"sub_batch,omitempty"`
	Accum     int    `json:"accum,omitempty"`
	SeqLen    int    `json:"seq_len,omitempty"`
	ImageSize int    `json:"image_size,omitempty"`
	GPUs      int    `json:"gpus,omitempty"`
	AMP       string `json:"amp,omitempty"`
	TF32      bool   `json:"tf32,omitempty"`
	// Precision is the FP32 math in effect as the workload read it back (mode, matmul_tf32,
	// conv_tf32, ...); Timing says how micro-steps are timed ("cuda-events" or "wall").
	Precision   map[string]any `json:"precision,omitempty"`
	Timing      string         `json:"timing,omitempty"`
	CPUAffinity string         `json:"cpu_affinity,omitempty"`
	// CUDAVisible is the CUDA_VISIBLE_DEVICES the workload saw.
	CUDAVisible  string `json:"cuda_visible_devices,omitempty"`
	DistBackend  string `json:"dist_backend,omitempty"`
	Device       string `json:"device,omitempty"`
	GPU          string `json:"gpu,omitempty"`
	Torch        string `json:"torch,omitempty"`
	Torchvision  string `json:"torchvision,omitempty"`
	Transformers string `json:"transformers,omitempty"`
	CUDA         string `json:"cuda,omitempty"`
	CuDNN        string `json:"cudnn,omitempty"`
	Python       string `json:"python,omitempty"`
	AllocConf    string `json:"alloc_conf,omitempty"`
	PID          int    `json:"pid,omitempty"`
	Threads      int    `json:"threads,omitempty"`
	Seed         int64  `json:"seed,omitempty"`
	DryRun       bool   `json:"dry_run,omitempty"`

	// ready
	WarmupSteps     int     `json:"warmup_steps,omitempty"`
	WarmupS         float64 `json:"warmup_s,omitempty"`
	MemAllocPeak    int64   `json:"mem_alloc_peak,omitempty"`
	MemReservedPeak int64   `json:"mem_reserved_peak,omitempty"`
	MemSource       string  `json:"mem_source,omitempty"`
	// MemDeviceBytes (ready and mem) is the job's GPU memory per device as the driver reports
	// it for its processes (nvidia-smi), CUDA context included: the largest over its ranks.
	MemDeviceBytes int64 `json:"mem_device_bytes,omitempty"`
	// WarmupStepMs is the median step time of the later half of the warm-up: the runner sizes
	// a warm worker's windows with it.
	WarmupStepMs float64 `json:"warmup_step_ms,omitempty"`

	// loaded (warm workers): the model build's seconds and the trainable parameters.
	BuildS float64 `json:"build_s,omitempty"`
	Params int64   `json:"params,omitempty"`

	// step
	I       int       `json:"i,omitempty"`
	T0Ns    int64     `json:"t0_ns,omitempty"`
	T1Ns    int64     `json:"t1_ns,omitempty"`
	MicroMs []float64 `json:"micro_ms,omitempty"`
	StepMs  float64   `json:"step_ms,omitempty"`
	ActMs   float64   `json:"act_ms,omitempty"`
	Samples int       `json:"samples,omitempty"`

	// mem
	MaxAllocated int64 `json:"max_allocated,omitempty"`
	MaxReserved  int64 `json:"max_reserved,omitempty"`

	// done and idle
	Steps int    `json:"steps,omitempty"`
	Exit  string `json:"exit,omitempty"`

	// oom
	Phase string `json:"phase,omitempty"`
	Msg   string `json:"msg,omitempty"`
}

// knownEvent reports whether name is a protocol v1 event.
func knownEvent(name string) bool {
	switch name {
	case EventStart, EventReady, EventStep, EventMem, EventDone, EventOOM, EventLoaded, EventIdle:
		return true
	}
	return false
}

// AppendLine appends e as one protocol line (compact JSON and '\n') to dst. Only the fields
// of e's kind are written, and "v" is always 1, so a parsed event re-encodes to the same line
// whatever unrelated fields it carried. The fake workload writes its stream with it.
func AppendLine(dst []byte, e Event) []byte {
	var v any
	switch e.Event {
	case EventStart:
		v = struct {
			V            int            `json:"v"`
			Event        string         `json:"event"`
			Run          string         `json:"run"`
			Model        string         `json:"model"`
			Impl         string         `json:"impl"`
			Batch        int            `json:"batch"`
			SubBatch     int            `json:"sub_batch"`
			Accum        int            `json:"accum"`
			GPUs         int            `json:"gpus,omitempty"`
			SeqLen       int            `json:"seq_len,omitempty"`
			ImageSize    int            `json:"image_size,omitempty"`
			AMP          string         `json:"amp"`
			TF32         bool           `json:"tf32"`
			Precision    map[string]any `json:"precision,omitempty"`
			Timing       string         `json:"timing,omitempty"`
			CPUAffinity  string         `json:"cpu_affinity,omitempty"`
			CUDAVisible  string         `json:"cuda_visible_devices,omitempty"`
			DistBackend  string         `json:"dist_backend,omitempty"`
			Device       string         `json:"device"`
			GPU          string         `json:"gpu,omitempty"`
			Torch        string         `json:"torch,omitempty"`
			Torchvision  string         `json:"torchvision,omitempty"`
			Transformers string         `json:"transformers,omitempty"`
			CUDA         string         `json:"cuda,omitempty"`
			CuDNN        string         `json:"cudnn,omitempty"`
			Python       string         `json:"python,omitempty"`
			AllocConf    string         `json:"alloc_conf,omitempty"`
			PID          int            `json:"pid"`
			Threads      int            `json:"threads"`
			Seed         int64          `json:"seed"`
			DryRun       bool           `json:"dry_run,omitempty"`
		}{1, e.Event, e.Run, e.Model, e.Impl, e.Batch, e.SubBatch, e.Accum, e.GPUs, e.SeqLen, e.ImageSize, e.AMP, e.TF32,
			e.Precision, e.Timing, e.CPUAffinity, e.CUDAVisible, e.DistBackend, e.Device, e.GPU, e.Torch, e.Torchvision, e.Transformers, e.CUDA, e.CuDNN, e.Python, e.AllocConf, e.PID,
			e.Threads, e.Seed, e.DryRun}
	case EventReady:
		v = struct {
			V               int     `json:"v"`
			Event           string  `json:"event"`
			WarmupSteps     int     `json:"warmup_steps"`
			WarmupS         float64 `json:"warmup_s"`
			MemAllocPeak    int64   `json:"mem_alloc_peak"`
			MemReservedPeak int64   `json:"mem_reserved_peak"`
			MemSource       string  `json:"mem_source,omitempty"`
			MemDeviceBytes  int64   `json:"mem_device_bytes,omitempty"`
			WarmupStepMs    float64 `json:"warmup_step_ms,omitempty"`
		}{1, e.Event, e.WarmupSteps, e.WarmupS, e.MemAllocPeak, e.MemReservedPeak, e.MemSource, e.MemDeviceBytes, e.WarmupStepMs}
	case EventLoaded:
		v = struct {
			V      int     `json:"v"`
			Event  string  `json:"event"`
			BuildS float64 `json:"build_s"`
			Params int64   `json:"params"`
		}{1, e.Event, e.BuildS, e.Params}
	case EventStep:
		v = struct {
			V       int       `json:"v"`
			Event   string    `json:"event"`
			I       int       `json:"i"`
			T0Ns    int64     `json:"t0_ns"`
			T1Ns    int64     `json:"t1_ns"`
			MicroMs []float64 `json:"micro_ms"`
			StepMs  float64   `json:"step_ms"`
			ActMs   float64   `json:"act_ms,omitempty"`
			Samples int       `json:"samples"`
		}{1, e.Event, e.I, e.T0Ns, e.T1Ns, nonNil(e.MicroMs), e.StepMs, e.ActMs, e.Samples}
	case EventMem:
		v = struct {
			V              int    `json:"v"`
			Event          string `json:"event"`
			MaxAllocated   int64  `json:"max_allocated"`
			MaxReserved    int64  `json:"max_reserved"`
			MemSource      string `json:"mem_source,omitempty"`
			MemDeviceBytes int64  `json:"mem_device_bytes,omitempty"`
		}{1, e.Event, e.MaxAllocated, e.MaxReserved, e.MemSource, e.MemDeviceBytes}
	case EventDone, EventIdle:
		v = struct {
			V     int    `json:"v"`
			Event string `json:"event"`
			Steps int    `json:"steps"`
			Exit  string `json:"exit"`
		}{1, e.Event, e.Steps, e.Exit}
	case EventOOM:
		v = struct {
			V     int    `json:"v"`
			Event string `json:"event"`
			Phase string `json:"phase"`
			Msg   string `json:"msg"`
		}{1, e.Event, e.Phase, e.Msg}
	default:
		v = struct {
			V     int    `json:"v"`
			Event string `json:"event"`
		}{1, e.Event}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only non-finite floats can fail; write them as a protocol-breaking line on purpose.
		return append(dst, `{"v":1,"event":"`+e.Event+`","error":"unencodable"}`+"\n"...)
	}
	return append(dst, buf.Bytes()...)
}

func nonNil(xs []float64) []float64 {
	if xs == nil {
		return []float64{}
	}
	return xs
}

// ErrProtocolVersion reports a line whose "v" is not ProtocolVersion.
var ErrProtocolVersion = errors.New("unsupported protocol version")

// ProtocolError is a malformed protocol line: the stream cannot be trusted after it.
type ProtocolError struct {
	Line int    // 1-based line number on stdout
	Text string // the offending line, shortened
	Err  error
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("protocol: stdout line %d: %v: %s", e.Line, e.Err, e.Text)
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// Parser reads protocol v1 events from a workload's stdout:
// lines starting with '{' are decoded as events, other lines are workload output and go to
// Log; "v" must be 1; unknown fields are ignored; unknown events are skipped with a warning
// on Log.
type Parser struct {
	sc *bufio.Scanner
	// Log receives non-protocol lines and warnings (may be nil).
	Log io.Writer
	// Raw receives every protocol line verbatim, newline-terminated (may be nil).
	Raw io.Writer
	// Warnings counts skipped unknown events.
	Warnings int
	line     int
}

// NewParser returns a parser reading r with a MaxLineBytes line limit.
func NewParser(r io.Reader) *Parser {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	return &Parser{sc: sc}
}

// Next returns the next event. It returns io.EOF at the end of the stream and a
// *ProtocolError for a malformed line, a version mismatch or a line over MaxLineBytes.
func (p *Parser) Next() (Event, error) {
	for p.sc.Scan() {
		p.line++
		raw := p.sc.Bytes()
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			p.log("%s\n", raw)
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return Event{}, &ProtocolError{Line: p.line, Text: shorten(line), Err: fmt.Errorf("malformed JSON: %w", err)}
		}
		if e.V != ProtocolVersion {
			return Event{}, &ProtocolError{Line: p.line, Text: shorten(line), Err: fmt.Errorf("%w %d (want %d)", ErrProtocolVersion, e.V, ProtocolVersion)}
		}
		if e.Event == "" {
			return Event{}, &ProtocolError{Line: p.line, Text: shorten(line), Err: errors.New(`missing "event"`)}
		}
		if p.Raw != nil {
			p.Raw.Write(line)
			p.Raw.Write([]byte{'\n'})
		}
		if !knownEvent(e.Event) {
			p.Warnings++
			p.log("sharebench: warning: stdout line %d: unknown event %s ignored\n", p.line, strconv.Quote(e.Event))
			continue
		}
		if err := checkNumbers(e); err != nil {
			return Event{}, &ProtocolError{Line: p.line, Text: shorten(line), Err: err}
		}
		return e, nil
	}
	if err := p.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, &ProtocolError{Line: p.line + 1, Text: "(line over 1 MiB)", Err: err}
		}
		return Event{}, fmt.Errorf("protocol: reading stdout: %w", err)
	}
	return Event{}, io.EOF
}

// maxStepSamples bounds the samples of one step: far above any batch, and low enough that the
// runner's sums of them cannot overflow.
const maxStepSamples = 1 << 32

// checkNumbers validates the numbers of an event that the runner measures with or records:
// counts, byte counts, durations and clock readings must be finite and not negative, a step's
// samples at most maxStepSamples, and a step must not end before it starts. A workload that
// reports otherwise is broken; its run fails with the reason instead of writing a meaningless
// number (a negative throughput, say) into the journal. The first bad number is reported.
func checkNumbers(e Event) error {
	switch e.Event {
	case EventReady:
		return cmp.Or(checkCount("warmup_steps", int64(e.WarmupSteps), math.MaxInt64), checkDuration("warmup_s", e.WarmupS),
			checkBytes("mem_alloc_peak", e.MemAllocPeak), checkBytes("mem_reserved_peak", e.MemReservedPeak),
			checkBytes("mem_device_bytes", e.MemDeviceBytes), checkDuration("warmup_step_ms", e.WarmupStepMs))
	case EventLoaded:
		return cmp.Or(checkDuration("build_s", e.BuildS), checkCount("params", e.Params, math.MaxInt64))
	case EventStep:
		if e.I < 0 {
			return fmt.Errorf("i %d: not a step index", e.I)
		}
		if err := cmp.Or(checkClock("t0_ns", e.T0Ns), checkClock("t1_ns", e.T1Ns)); err != nil {
			return err
		}
		if e.T1Ns < e.T0Ns {
			return errors.New("step ends before it starts (t1_ns < t0_ns)")
		}
		for i, ms := range e.MicroMs {
			if err := checkDuration(fmt.Sprintf("micro_ms[%d]", i), ms); err != nil {
				return err
			}
		}
		return cmp.Or(checkDuration("step_ms", e.StepMs), checkDuration("act_ms", e.ActMs), checkCount("samples", int64(e.Samples), maxStepSamples))
	case EventMem:
		return cmp.Or(checkBytes("max_allocated", e.MaxAllocated), checkBytes("max_reserved", e.MaxReserved),
			checkBytes("mem_device_bytes", e.MemDeviceBytes))
	case EventDone, EventIdle:
		return checkCount("steps", int64(e.Steps), math.MaxInt64)
	}
	return nil
}

func checkCount(name string, n, most int64) error {
	if n < 0 || n > most {
		return fmt.Errorf("%s %d: not a count", name, n)
	}
	return nil
}

func checkBytes(name string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%s %d: not a byte count", name, n)
	}
	return nil
}

func checkClock(name string, ns int64) error {
	if ns < 0 {
		return fmt.Errorf("%s %d: not a monotonic clock reading", name, ns)
	}
	return nil
}

// checkDuration accepts finite, non-negative milliseconds or seconds (NaN fails the comparison).
func checkDuration(name string, x float64) error {
	if !(x >= 0) || math.IsInf(x, 1) {
		return fmt.Errorf("%s %v: not a duration", name, x)
	}
	return nil
}

func (p *Parser) log(format string, args ...any) {
	if p.Log != nil {
		fmt.Fprintf(p.Log, format, args...)
	}
}

// shorten returns at most 200 bytes of a line for error messages.
func shorten(b []byte) string {
	const n = 200
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
