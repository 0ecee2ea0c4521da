package runner

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseAll returns the events of a stream and the first error other than io.EOF.
func parseAll(t testing.TB, r io.Reader, log io.Writer) ([]Event, error) {
	t.Helper()
	p := NewParser(r)
	p.Log = log
	var evs []Event
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
	}
}

func TestParserTrainStream(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/protocol-train.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var log bytes.Buffer
	evs, err := parseAll(t, f, &log)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Event)
	}
	want := []string{"start", "ready", "step", "step", "mem", "done"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s := evs[0]; s.Model != "resnet18" || s.Accum != 2 || s.GPU != "" || s.Torch != "1.13.0a0" || s.Device != "cpu" {
		t.Errorf("start event = %+v", s)
	}
	if st := evs[2]; st.T0Ns != 1000 || st.T1Ns != 201000 || len(st.MicroMs) != 2 || st.Samples != 8 {
		t.Errorf("step event = %+v", st)
	}
	if !strings.Contains(log.String(), "some warning printed by a C extension") {
		t.Errorf("non-JSON line not logged: %q", log.String())
	}
	if !strings.Contains(log.String(), `unknown event "progress"`) {
		t.Errorf("unknown event not warned about: %q", log.String())
	}
}

func TestParserErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr string
		isVer   bool
	}{
		{"version 2", `{"v":2,"event":"start"}`, "unsupported protocol version 2", true},
		{"version missing", `{"event":"start"}`, "unsupported protocol version 0", true},
		{"truncated JSON", `{"v":1,"event":"step","i":3,"t0_ns":`, "malformed JSON", false},
		{"wrong type", `{"v":1,"event":"step","i":"three"}`, "malformed JSON", false},
		{"trailing garbage", `{"v":1,"event":"done"} x`, "malformed JSON", false},
		{"no event", `{"v":1}`, `missing "event"`, false},
		{"time runs backwards", `{"v":1,"event":"step","t0_ns":10,"t1_ns":5}`, "t1_ns < t0_ns", false},
		{"negative samples", `{"v":1,"event":"step","t0_ns":1,"t1_ns":2,"samples":-8}`, "samples -8: not a count", false},
		{"negative step_ms", `{"v":1,"event":"step","t0_ns":1,"t1_ns":2,"step_ms":-1.5}`, "step_ms -1.5: not a duration", false},
		{"negative micro-step", `{"v":1,"event":"step","t0_ns":1,"t1_ns":2,"micro_ms":[1,-2]}`, "micro_ms[1] -2: not a duration", false},
		{"negative act_ms", `{"v":1,"event":"step","t0_ns":1,"t1_ns":2,"act_ms":-3}`, "act_ms -3: not a duration", false},
		{"negative timestamp", `{"v":1,"event":"step","t0_ns":-5,"t1_ns":2}`, "t0_ns -5: not a monotonic clock reading", false},
		{"negative step index", `{"v":1,"event":"step","i":-1,"t0_ns":1,"t1_ns":2}`, "i -1: not a step index", false},
		{"huge samples", `{"v":1,"event":"step","t0_ns":1,"t1_ns":2,"samples":9000000000000000000}`, "samples 9000000000000000000: not a count", false},
		{"negative warm-up time", `{"v":1,"event":"ready","warmup_steps":3,"warmup_s":-1}`, "warmup_s -1: not a duration", false},
		{"negative warm-up steps", `{"v":1,"event":"ready","warmup_steps":-3}`, "warmup_steps -3: not a count", false},
		{"negative memory at ready", `{"v":1,"event":"ready","mem_reserved_peak":-1024}`, "mem_reserved_peak -1024: not a byte count", false},
		{"negative memory at the end", `{"v":1,"event":"mem","max_allocated":5,"max_reserved":-5}`, "max_reserved -5: not a byte count", false},
		{"negative device memory", `{"v":1,"event":"mem","mem_device_bytes":-1}`, "mem_device_bytes -1: not a byte count", false},
		{"negative step count", `{"v":1,"event":"done","steps":-2,"exit":"ok"}`, "steps -2: not a count", false},
		{"line over 1 MiB", `{"v":1,"event":"step","micro_ms":[` + strings.Repeat("1.0,", 300000) + `1]}`, "token too long", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAll(t, strings.NewReader(`{"v":1,"event":"start","model":"m"}`+"\n"+tt.in+"\n"), nil)
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ProtocolError", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to mention %q", err, tt.wantErr)
			}
			if pe.Line != 2 {
				t.Errorf("line = %d, want 2", pe.Line)
			}
			if errors.Is(err, ErrProtocolVersion) != tt.isVer {
				t.Errorf("errors.Is(err, ErrProtocolVersion) = %v", !tt.isVer)
			}
		})
	}
}

func TestParserLongLine(t *testing.T) {
	t.Parallel()
	// 100k micro-steps: far above bufio's default 64 KiB token, below the 1 MiB limit.
	micro := make([]float64, 100000)
	for i := range micro {
		micro[i] = 1.5
	}
	line := AppendLine(nil, Event{Event: EventStep, T0Ns: 1, T1Ns: 2, MicroMs: micro})
	if len(line) < 64<<10 || len(line) > MaxLineBytes {
		t.Fatalf("test line is %d bytes", len(line))
	}
	evs, err := parseAll(t, bytes.NewReader(line), nil)
	if err != nil || len(evs) != 1 || len(evs[0].MicroMs) != len(micro) {
		t.Fatalf("got %d events, err %v", len(evs), err)
	}
}

func sampleEvents() []Event {
	return []Event{
		{Event: EventStart, Run: "r0", Model: "bert", Impl: "torch-encoder", Batch: 16, SubBatch: 4, Accum: 4, SeqLen: 128, AMP: "off",
			Device: "cuda:0", GPU: "NVIDIA H200", Torch: "2.11.0", CUDA: "12.8", CuDNN: "9.1", PID: 42, Threads: 2, Seed: 1},
		{Event: EventReady, WarmupSteps: 20, WarmupS: 11.8, MemAllocPeak: 12345678901, MemReservedPeak: 13958643712},
		{Event: EventStep, I: 0, T0Ns: 123, T1Ns: 456, MicroMs: []float64{31.2, 31, 31.1, 31.3}, StepMs: 128.4, Samples: 256},
		{Event: EventStep, I: 1, T0Ns: 456, T1Ns: 456, MicroMs: []float64{}, StepMs: 0, Samples: 0},
		{Event: EventMem, MaxAllocated: 12345678901, MaxReserved: 13958643712},
		{Event: EventDone, Steps: 412, Exit: "ok"},
		{Event: EventOOM, Phase: "warmup", Msg: "CUDA out of memory. \"quoted\" <html> \u00e9"},
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	var stream []byte
	for _, e := range sampleEvents() {
		stream = AppendLine(stream, e)
	}
	got, err := parseAll(t, bytes.NewReader(stream), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleEvents()
	for i := range want {
		want[i].V = 1
	}
	want[3].MicroMs = nil // an empty array decodes as nil-equivalent below
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []float64) bool { return len(a) == len(b) && (len(a) == 0 || cmp.Equal(a, b)) })); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if bytes.Count(stream, []byte("\n")) != len(want) {
		t.Errorf("each event must be exactly one line:\n%s", stream)
	}
}

// FuzzProtocol feeds arbitrary streams to the parser: it must never panic, and every event it
// returns must survive write→parse: encoding it gives a line that parses to an event whose
// encoding is the same line.
func FuzzProtocol(f *testing.F) {
	if data, err := os.ReadFile("testdata/protocol-train.jsonl"); err == nil {
		f.Add(data)
	}
	for _, e := range sampleEvents() {
		f.Add(AppendLine(nil, e))
	}
	f.Add([]byte(`{"v":1,"event":"step","i":1e400}`))
	f.Add([]byte("{\"v\":1,\"event\":\"done\"}\r\n\n   \n{}\n"))
	f.Add([]byte(`{"v":1,"event":"start","model":"\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := NewParser(bytes.NewReader(data))
		p.Log, p.Raw = io.Discard, io.Discard
		for i := 0; i < 10000; i++ {
			e, err := p.Next()
			if err != nil {
				return
			}
			line := AppendLine(nil, e)
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("AppendLine(%+v) is not one line: %q", e, line)
			}
			e2, err := NewParser(bytes.NewReader(line)).Next()
			if err != nil {
				t.Fatalf("re-encoded event does not parse: %v\nline: %s", err, line)
			}
			if line2 := AppendLine(nil, e2); !bytes.Equal(line, line2) {
				t.Fatalf("write→parse→write differs:\n%s%s", line, line2)
			}
		}
	})
}

// BenchmarkParseStep measures the parent's cost per step event (parse one line of a
// 4-micro-step stream): the harness's CPU time per optimizer step.
func BenchmarkParseStep(b *testing.B) {
	line := AppendLine(nil, Event{Event: EventStep, I: 123, T0Ns: 1234567890123, T1Ns: 1234667890123,
		MicroMs: []float64{24.9, 25.1, 25.0, 24.8}, StepMs: 100.0, Samples: 256})
	stream := bytes.Repeat(line, b.N)
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	p := NewParser(bytes.NewReader(stream))
	p.Raw = io.Discard
	for i := 0; i < b.N; i++ {
		if _, err := p.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
