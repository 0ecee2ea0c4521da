package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/sharebench/sharebench/internal/clip"
	"github.com/sharebench/sharebench/internal/simtime"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// maxLine is the longest line a reader accepts, in bytes.
const maxLine = 1 << 20

// Options configures how readers turn rows into jobs. The zero value is ready to use.
type Options struct {
	// Seed seeds the model mapping of the Philly table. The model of data row i is chosen by
	// the first Uint64 of the math/rand/v2 PCG generator seeded with (Seed, splitmix64(i)).
	Seed uint64
	// PhillyModels lists the models a Philly row may be mapped to, with their weights.
	// Empty means [DefaultModels].
	PhillyModels []ModelSpec
	// PhillyModelsFrom, when PhillyModels is empty, supplies them once the input turns out to
	// be a Philly table (nil or empty: [DefaultModels]). It is called at most once, from the
	// reading goroutine, so that a caller can read the trace while it still works them out.
	PhillyModelsFrom func() []ModelSpec
	// SkipInvalid makes the Philly reader skip rows whose duration or GPU count is not
	// positive instead of failing on them; [Reader.Skipped] counts the skipped rows.
	// It does not excuse syntax errors, and it has no effect on the other formats.
	SkipInvalid bool
}

// columns holds the field index of each column a dialect uses; -1 marks an absent column.
type columns struct {
	id, submit, gpus, iters, model, batch, iterTime, duration, timestamp int
	stages                                                               [3]int
	priority                                                             int
}

// Reader reads jobs from a trace, one at a time, in file order. It is modelled on
// bufio.Scanner: call Scan until it returns false, then check Err.
//
// The Philly table maps its timestamps relative to the earliest one in the file, so a Reader
// for that format reads the whole input on the first call to Scan.
type Reader struct {
	name string
	want Format
	opt  Options
	sc   *bufio.Scanner

	d      *dialect
	names  []string // column names as the header spells them
	col    columns
	header int // line number of the header
	line   int // line number of the current line
	fields [][]byte

	job  Job
	err  error
	done bool
	n    int           // jobs returned so far
	seen map[JobID]int // line of each job id returned so far, beyond denseIDs
	// lines[id] is the line of job id for ids below denseIDs (0: none yet), which spares the
	// map's hashing and growth on the usual traces, numbered from 0.
	lines   []int32
	models  map[string]string  // interned, validated model names
	stages  map[Stages]*Stages // interned stage times and priorities (Muri's dialect)
	skipped int

	philly *phillyState
}

// NewReader returns a Reader that reads the trace in r, in format f (FormatAuto detects it
// from the header). The name is used in error messages, usually the file's path.
func NewReader(r io.Reader, name string, f Format, opt Options) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &Reader{name: name, want: f, opt: opt, sc: sc}
}

// Scan advances to the next job, which Job then returns. It returns false at the end of the
// input or on the first error, which Err then returns.
func (r *Reader) Scan() bool {
	if r.done {
		return false
	}
	if r.d == nil && !r.readHeader() {
		r.done = true
		return false
	}
	if r.d.format == FormatPhilly {
		return r.scanPhilly()
	}
	for r.next() {
		j, err := r.parseRow()
		if err != nil {
			return r.fail(err)
		}
		if first, dup := r.see(j.ID, j.Line); dup {
			return r.fail(r.errAt(r.col.id, fmt.Sprintf("duplicate job id %d (first on line %d)", j.ID, first)))
		}
		r.job = j
		r.n++
		return true
	}
	return r.finish()
}

// denseIDs bounds the job ids whose lines sit in a slice rather than the map (4 bytes each).
const denseIDs = 1 << 22

// see notes that job id is on line; dup reports an id already seen, on line first.
func (r *Reader) see(id JobID, line int) (first int, dup bool) {
	if id >= 0 && id < denseIDs && line > 0 && line < math.MaxInt32 {
		if int(id) >= len(r.lines) {
			r.lines = append(r.lines, make([]int32, int(id)+1-len(r.lines))...)
			r.lines = r.lines[:cap(r.lines)]
		}
		if l := r.lines[id]; l != 0 {
			return int(l), true
		}
		r.lines[id] = int32(line)
		return 0, false
	}
	if first, dup := r.seen[id]; dup {
		return first, true
	}
	if r.seen == nil {
		r.seen = make(map[JobID]int)
	}
	r.seen[id] = line
	return 0, false
}

// Job returns the job read by the last successful call to Scan.
func (r *Reader) Job() Job { return r.job }

// Err returns the first error met, or nil if the input was read to its end without one.
// Malformed input yields a *SyntaxError.
func (r *Reader) Err() error { return r.err }

// Format returns the format being read: the detected one under FormatAuto. It is FormatAuto
// until the header has been read by the first call to Scan.
func (r *Reader) Format() Format {
	if r.d == nil {
		return FormatAuto
	}
	return r.d.format
}

// Skipped returns how many invalid rows were skipped under [Options.SkipInvalid].
func (r *Reader) Skipped() int { return r.skipped }

// fail records err and ends the scan.
func (r *Reader) fail(err error) bool {
	r.err = err
	r.done = true
	return false
}

// finish ends a scan that reached the end of the input.
func (r *Reader) finish() bool {
	r.done = true
	if r.err == nil && r.n == 0 {
		msg := "no jobs after the header"
		if r.skipped > 0 {
			msg = fmt.Sprintf("no valid jobs after the header (%d invalid rows skipped)", r.skipped)
		}
		r.err = &SyntaxError{File: r.name, Line: r.header, Msg: msg}
	}
	return false
}

// next reads the next non-blank line and splits it into r.fields. It returns false at the end
// of the input or on a read error, which it records.
func (r *Reader) next() bool {
	for r.sc.Scan() {
		r.line++
		b := r.sc.Bytes()
		if r.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		b = trimSpace(b)
		if len(b) == 0 {
			continue
		}
		r.fields = r.fields[:0]
		for {
			i := bytes.IndexByte(b, ',')
			if i < 0 {
				r.fields = append(r.fields, trimSpace(b))
				break
			}
			r.fields = append(r.fields, trimSpace(b[:i]))
			b = b[i+1:]
		}
		return true
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			r.err = &SyntaxError{File: r.name, Line: r.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
		} else {
			r.err = fmt.Errorf("trace: reading %s: %w", r.name, err)
		}
	}
	return false
}

// trimSpace removes leading and trailing spaces and tabs.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// readHeader reads the header line and selects the dialect.
func (r *Reader) readHeader() bool {
	if !r.next() {
		if r.err == nil {
			r.err = &SyntaxError{File: r.name, Line: max(r.line, 1), Msg: "empty file: no header line"}
		}
		return false
	}
	r.header = r.line
	r.names = make([]string, len(r.fields))
	for i, f := range r.fields {
		r.names[i] = string(f)
		for _, prev := range r.names[:i] {
			if prev == r.names[i] {
				r.err = &SyntaxError{File: r.name, Line: r.line, Msg: fmt.Sprintf("duplicate column %s in the header", clip.Quote(prev))}
				return false
			}
		}
	}
	got := strings.Join(r.names, ",")
	switch r.want {
	case FormatAuto:
		for i := range dialects {
			if dialects[i].matches(r.names) {
				r.d = &dialects[i]
			}
		}
		if r.d == nil {
			r.err = &SyntaxError{File: r.name, Line: r.line,
				Msg: fmt.Sprintf("unknown header %s (known headers: %s)", clip.Quote(got), knownHeaders())}
			return false
		}
	default:
		d, ok := dialectOf(r.want)
		if !ok {
			r.err = fmt.Errorf("trace: %s: unknown format %v", r.name, r.want)
			return false
		}
		if !d.matches(r.names) {
			r.err = &SyntaxError{File: r.name, Line: r.line,
				Msg: fmt.Sprintf("header %s does not match the %s format (want %s)", clip.Quote(got), d.format, d.spell())}
			return false
		}
		r.d = d
	}
	idx := func(names ...string) int {
		for _, n := range names {
			for i, h := range r.names {
				if h == n {
					return i
				}
			}
		}
		return -1
	}
	r.col = columns{
		id:        idx("job_id"),
		submit:    idx("submit_s", "submit_time"),
		gpus:      idx("num_gpu", "num_gpus"),
		iters:     idx("iterations"),
		model:     idx("model", "model_name"),
		batch:     idx("batch_size"),
		iterTime:  idx("iteration_time_s", "iteration_time"),
		duration:  idx("duration"),
		timestamp: idx("timestamp"),
		stages:    [3]int{idx("resource_time_0"), idx("resource_time_1"), idx("resource_time_2")},
		priority:  idx("priority"),
	}
	return true
}

// errAt returns a SyntaxError for the field at index i of the current line.
func (r *Reader) errAt(i int, msg string) *SyntaxError {
	return &SyntaxError{File: r.name, Line: r.line, Column: r.names[i], Msg: msg}
}

// number parses field i as a decimal scaled by 10^scale and returns it.
func (r *Reader) number(i, scale int) (int64, error) {
	b := r.fields[i]
	v, e := parseFixed(b, scale)
	switch e {
	case numOK:
		return v, nil
	case numEmpty:
		return 0, r.errAt(i, "missing value")
	case numNotFinite:
		return 0, r.errAt(i, fmt.Sprintf("invalid number %s: not finite", clip.Quote(b)))
	case numRange:
		return 0, r.errAt(i, fmt.Sprintf("number %s out of range", clip.Quote(b)))
	case numPrecision:
		if scale == 0 {
			return 0, r.errAt(i, fmt.Sprintf("invalid number %s: not an integer", clip.Quote(b)))
		}
		return 0, r.errAt(i, fmt.Sprintf("invalid number %s: finer than a nanosecond", clip.Quote(b)))
	default:
		return 0, r.errAt(i, fmt.Sprintf("invalid number %s", clip.Quote(b)))
	}
}

// bounded parses field i as a decimal scaled by 10^scale and checks lo ≤ value ≤ hi.
func (r *Reader) bounded(i, scale int, lo, hi int64) (int64, error) {
	v, err := r.number(i, scale)
	if err != nil {
		return 0, err
	}
	switch {
	case v < lo && lo == 1:
		return 0, r.errAt(i, fmt.Sprintf("must be positive, got %s", clip.Quote(r.fields[i])))
	case v < lo:
		return 0, r.errAt(i, fmt.Sprintf("must not be negative, got %s", clip.Quote(r.fields[i])))
	case v > hi:
		return 0, r.errAt(i, fmt.Sprintf("number %s out of range", clip.Quote(r.fields[i])))
	}
	return v, nil
}

// Scales of the time units: a value in the unit times 10^scale is nanoseconds.
const (
	scaleSeconds = 9
	scaleMillis  = 6
)

// parseRow parses the current line of a canonical, Muri or Tiresias trace.
func (r *Reader) parseRow() (Job, error) {
	if len(r.fields) != len(r.names) {
		return Job{}, &SyntaxError{File: r.name, Line: r.line,
			Msg: fmt.Sprintf("wrong number of fields: got %d, want %d", len(r.fields), len(r.names))}
	}
	scale := scaleSeconds
	if r.d.format == FormatMuri {
		scale = scaleMillis
	}
	j := Job{Line: r.line}
	id, err := r.bounded(r.col.id, 0, 0, math.MaxInt64)
	if err != nil {
		return Job{}, err
	}
	j.ID = JobID(id)
	if j.Submit, err = r.duration(r.col.submit, scale); err != nil {
		return Job{}, err
	}
	gpus, err := r.bounded(r.col.gpus, 0, 1, math.MaxInt32)
	if err != nil {
		return Job{}, err
	}
	j.GPUs = int(gpus)
	if j.Iters, err = r.bounded(r.col.iters, 0, 1, math.MaxInt64); err != nil {
		return Job{}, err
	}
	if j.Model, err = r.model(r.col.model); err != nil {
		return Job{}, err
	}
	if r.col.batch >= 0 {
		batch, err := r.bounded(r.col.batch, 0, 0, math.MaxInt32)
		if err != nil {
			return Job{}, err
		}
		j.Batch = int(batch)
	}
	if r.col.iterTime >= 0 {
		if j.IterTime, err = r.duration(r.col.iterTime, scale); err != nil {
			return Job{}, err
		}
	}
	if r.d.format == FormatMuri {
		if j.Stages, err = r.readStages(); err != nil {
			return Job{}, err
		}
	}
	runCol := r.col.iters
	if r.d.format == FormatTiresias {
		d, err := r.duration(r.col.duration, scale)
		if err != nil {
			return Job{}, err
		}
		if d > 0 {
			j.IterTime = time.Duration(max(1, divRound(int64(d), j.Iters)))
		}
		runCol = r.col.duration
	}
	return j, r.checkHorizon(j, r.col.submit, runCol)
}

// readStages parses Muri's resource_time_0..2 (milliseconds), priority and duration columns of the
// current line and returns them interned.
func (r *Reader) readStages() (*Stages, error) {
	var st Stages
	for k, c := range r.col.stages {
		d, err := r.duration(c, scaleMillis)
		if err != nil {
			return nil, err
		}
		st.Time[k] = d
	}
	p, err := r.bounded(r.col.priority, 0, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	st.Priority = int(p)
	d, err := r.duration(r.col.duration, scaleMillis)
	if err != nil {
		return nil, err
	}
	st.Duration = d - d%time.Millisecond // int(float(duration)) in jobs.py add_job
	if s, ok := r.stages[st]; ok {
		return s, nil
	}
	if r.stages == nil {
		r.stages = make(map[Stages]*Stages)
	}
	s := &st
	r.stages[st] = s
	return s, nil
}

// Horizon is the latest instant, from the start of a trace, that a job may submit at or end by
// when run alone: 100 years. The simulator's schedules stay within it too (internal/simtime).
const Horizon = simtime.Horizon

// checkHorizon reports a job that submits after the horizon, or whose exclusive run time
// (iterations × iteration time) would end after it, at the submit or run-time column.
func (r *Reader) checkHorizon(j Job, submitCol, runCol int) error {
	if j.Submit > Horizon {
		return r.errAt(submitCol, simtime.ErrBeyond("submits after", j.Submit))
	}
	if j.IterTime > 0 {
		if end := simtime.Add(j.Submit, simtime.Mul(j.IterTime, j.Iters)); end > Horizon {
			return r.errAt(runCol, fmt.Sprintf("%d × %s per iteration %s", j.Iters, simtime.Format(j.IterTime),
				simtime.ErrBeyond("ends after", end)))
		}
	}
	return nil
}

// duration parses field i as a non-negative time in the unit given by scale.
func (r *Reader) duration(i, scale int) (time.Duration, error) {
	v, err := r.bounded(i, scale, 0, math.MaxInt64)
	return time.Duration(v), err
}

// model validates field i as a model name and returns it, interned.
func (r *Reader) model(i int) (string, error) {
	b := r.fields[i]
	if s, ok := r.models[string(b)]; ok {
		return s, nil
	}
	if msg := checkModelName(b); msg != "" {
		return "", r.errAt(i, msg)
	}
	if r.models == nil {
		r.models = make(map[string]string)
	}
	s := string(b)
	r.models[s] = s
	return s, nil
}

// checkModelName returns why b is not a valid model name, or "" if it is. A valid name is
// non-empty UTF-8 without control characters, commas, double quotes or surrounding blanks,
// so that [Write] can always write it back unchanged.
func checkModelName[T string | []byte](b T) string {
	if len(b) == 0 {
		return "missing value"
	}
	if !utf8.Valid([]byte(b)) {
		return fmt.Sprintf("invalid model name %s: not UTF-8", clip.Quote(b))
	}
	for k := 0; k < len(b); k++ {
		c := b[k]
		if c < 0x20 || c == 0x7f || c == ',' || c == '"' {
			return fmt.Sprintf("invalid model name %s", clip.Quote(b))
		}
	}
	if b[0] == ' ' || b[len(b)-1] == ' ' {
		return fmt.Sprintf("invalid model name %s: surrounding blanks", clip.Quote(b))
	}
	return ""
}

// ReadAll reads every job of the trace in r, in format f, and returns them sorted by
// (Submit, ID). The name is used in error messages, usually the file's path.
func ReadAll(r io.Reader, name string, f Format, opt Options) ([]Job, error) {
	return readAll(r, name, f, opt, 0)
}

// readAll is ReadAll with room for about rows jobs made at once.
func readAll(r io.Reader, name string, f Format, opt Options, rows int) ([]Job, error) {
	rd := NewReader(r, name, f, opt)
	jobs := make([]Job, 0, rows)
	for rd.Scan() {
		if len(jobs) == 0 && rd.philly != nil {
			jobs = make([]Job, 0, len(rd.philly.rows))
		}
		jobs = append(jobs, rd.Job())
	}
	if err := rd.Err(); err != nil {
		return nil, err
	}
	Sort(jobs)
	return jobs, nil
}

// ReadFile reads every job of the trace file at path, in format f, like [ReadAll]. Errors
// name the file by path.
func ReadFile(path string, f Format, opt Options) ([]Job, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	// Room for the jobs up front, from the file's size and the length of its first lines: a
	// growing slice of a million jobs copies hundreds of megabytes.
	br := bufio.NewReaderSize(fh, 64<<10)
	rows := 0
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() {
		head, _ := br.Peek(64 << 10)
		if n := bytes.Count(head, []byte{'\n'}); n > 1 {
			rows = int(min(st.Size()/int64(len(head))*int64(n)+int64(n), st.Size()/8))
		}
	}
	jobs, err := readAll(br, path, f, opt, rows)
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("trace: %w", cerr)
	}
	return jobs, err
}
