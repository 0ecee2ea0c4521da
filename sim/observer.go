package sim

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sharebench/sharebench/trace"
)

// Kind names a decision-log event.
type Kind string

// The events of the decision log.
const (
	Submit  Kind = "submit"
	Start   Kind = "start"
	Preempt Kind = "preempt"
	Finish  Kind = "finish"
	Demote  Kind = "demote"
	Promote Kind = "promote"
)

// Event is one entry of the decision log.
type Event struct {
	T        time.Duration
	Kind     Kind
	Job      trace.JobID
	GPUs     []string // "node-index", for Start
	SubBatch int      // for Start
	Partners []trace.JobID
	Reason   string
	JCT      time.Duration // for Finish
}

// Observer receives the decision log, event by event, in order. An event's slices may be shared
// with other events and with the engine: an observer reads them and does not change them.
type Observer func(Event)

func (e *engine) emit(ev Event) {
	if e.obs != nil {
		e.obs(ev)
	}
}

// gpuName names GPU g as events do ("node-index"), formatting each name once per run.
func (e *engine) gpuName(g int) string {
	if e.names == nil {
		e.names = make([]string, e.cl.Shape().GPUs())
	}
	if e.names[g] == "" {
		e.names[g] = e.cl.ID(g).String()
	}
	return e.names[g]
}

// gpuNames names the GPUs on (sorted, distinct) as a start event lists them. A run of
// consecutive GPUs, as YARN places most jobs, is a slice of the names of all GPUs in order,
// which spares an allocation per start.
func (e *engine) gpuNames(on []int) []string {
	if !e.allNamed {
		for g := range e.cl.Shape().GPUs() {
			e.gpuName(g)
		}
		e.allNamed = true
	}
	if n := len(on); on[n-1]-on[0] == n-1 {
		return e.names[on[0] : on[0]+n : on[0]+n]
	}
	ids := make([]string, len(on))
	for k, g := range on {
		ids[k] = e.names[g]
	}
	return ids
}

// JSONLWriter returns an Observer that writes each event as one JSON line to w, and a flush
// function that returns the first write error.
func JSONLWriter(w io.Writer) (Observer, func() error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var err error
	var b []byte
	obs := func(ev Event) {
		if err != nil {
			return
		}
		b = append(b[:0], `{"t_s":`...)
		b = appendSeconds(b, ev.T)
		b = append(b, `,"event":`...)
		b = appendQuote(b, string(ev.Kind))
		b = append(b, `,"job":`...)
		b = strconv.AppendInt(b, int64(ev.Job), 10)
		if ev.Kind == Start {
			b = append(b, `,"gpus":[`...)
			for i, g := range ev.GPUs {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendQuote(b, g)
			}
			b = append(b, `],"sub_batch":`...)
			b = strconv.AppendInt(b, int64(ev.SubBatch), 10)
			b = append(b, `,"partners":[`...)
			for i, p := range ev.Partners {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(p), 10)
			}
			b = append(b, ']')
		}
		if ev.Kind == Finish {
			b = append(b, `,"jct_s":`...)
			b = appendSeconds(b, ev.JCT)
		}
		if ev.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendQuote(b, ev.Reason)
		}
		b = append(b, "}\n"...)
		_, err = bw.Write(b)
	}
	flush := func() error {
		if err != nil {
			return err
		}
		return bw.Flush()
	}
	return obs, flush
}

// JSONLBackground is JSONLWriter with the formatting and the writes done on a goroutine of its
// own, in batches of events: on a machine with a core to spare, a run does not wait for its
// decision log (the log of a run that preempts often is most of its work). The file's bytes are
// those JSONLWriter writes. No event may follow the flush, which must be called once the run is
// over, also after a failed run: it ends the goroutine. Calling it again returns the same error.
func JSONLBackground(w io.Writer) (Observer, func() error) {
	const batch, buffers = 512, 3
	full := make(chan []Event, buffers-1)
	free := make(chan []Event, buffers)
	for range buffers {
		free <- make([]Event, 0, batch)
	}
	done := make(chan error, 1)
	go func() {
		write, flush := JSONLWriter(w)
		for evs := range full {
			for _, ev := range evs {
				write(ev)
			}
			clear(evs) // let the events' strings go
			free <- evs[:0]
		}
		done <- flush()
	}()
	cur := <-free
	obs := func(ev Event) {
		if len(ev.Partners) > 0 { // the policy's slice, which it may reuse before the line is written
			ev.Partners = slices.Clone(ev.Partners)
		}
		if cur = append(cur, ev); len(cur) == batch {
			full <- cur
			cur = <-free
		}
	}
	var err error
	ended := false
	flush := func() error {
		if !ended {
			ended = true
			full <- cur
			close(full)
			err = <-done
		}
		return err
	}
	return obs, flush
}

// plain marks the bytes strconv.AppendQuote leaves as they are on their own: printable ASCII
// but the quote and the backslash (one lookup per byte; most of the log's strings are these).
var plain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendQuote is strconv.AppendQuote, with a fast path for strings it would leave as they are:
// valid UTF-8 of printable runes without quotes or backslashes (GPU names, event kinds,
// reasons, which may hold "≥" or "×").
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return strconv.AppendQuote(b, s)
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) {
			return strconv.AppendQuote(b, s)
		}
		i += n
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendSeconds writes d in seconds with exactly three decimals, rounding half away from zero
// on the integer nanosecond count (no float formatting, so output is exact and stable).
func appendSeconds(b []byte, d time.Duration) []byte {
	neg := d < 0
	if neg {
		d = -d
		b = append(b, '-')
	}
	ms := (int64(d) + 500_000) / 1_000_000
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	f := ms % 1000
	b = append(b, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	return b
}

// appendExactSeconds appends d in seconds with every nanosecond digit that is not a trailing
// zero (e.g. 12, 12.5, 12.000000001), so runs compare job by job with other simulators.
func appendExactSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	b = strconv.AppendInt(b, int64(d/time.Second), 10)
	frac := int64(d % time.Second)
	if frac == 0 {
		return b
	}
	digits := 9
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	var buf [10]byte // '.' and the digits, the last one first
	buf[0] = '.'
	for i := digits; i > 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, buf[:digits+1]...)
}
