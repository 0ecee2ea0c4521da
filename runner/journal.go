package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/sharebench/sharebench/internal/fsutil"
)

// JournalFile is the journal's name inside a campaign's output directory.
const JournalFile = "journal.jsonl"

// Journal is the append-only record of completed cells: one Result per line (format in
// doc.go). Each Append writes one line with a single write under an exclusive flock and
// fsyncs it, so a crash or SIGKILL loses at most the record being written, and concurrent
// writers on one host do not interleave.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenJournal opens (creating if needed) the journal at path for appending. It refuses a
// symbolic link or anything but a regular file there (O_NOFOLLOW: records must not land in a
// file elsewhere). A last line cut short by a crash is terminated, so new records always start
// on a fresh line.
func OpenJournal(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("runner: journal: %w", err)
	}
	f, err := openNoFollow(path, os.O_RDWR|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	j := &Journal{f: f, path: path}
	unlock := lockFile(f)
	defer unlock()
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("runner: journal: %w", err)
	}
	if fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			f.Close()
			return nil, fmt.Errorf("runner: journal: %w", err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return nil, fmt.Errorf("runner: journal: %w", err)
			}
		}
	} else {
		fsutil.SyncDir(filepath.Dir(path))
	}
	return j, nil
}

// openNoFollow opens path without following a symbolic link and checks that it is a regular
// file.
func openNoFollow(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, 0o644)
	if err != nil {
		if isSymlink(path) {
			return nil, fmt.Errorf("runner: journal %s is a symbolic link; refusing to follow it (replace it with the file)", path)
		}
		return nil, fmt.Errorf("runner: journal: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("runner: journal %s is not a regular file", path)
	}
	return f, nil
}

func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Append writes r as one line and fsyncs the file.
func (j *Journal) Append(r Result) error {
	line, err := MarshalResult(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock := lockFile(j.f)
	defer unlock()
	if _, err := j.f.Write(line); err != nil {
		return fmt.Errorf("runner: journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("runner: journal %s: %w", j.path, err)
	}
	return nil
}

// AppendRecord writes a record of another kind than "cell" (its Record field names the kind,
// e.g. RecordWorkers) as one line and fsyncs the file; readers of cell records skip it.
func (j *Journal) AppendRecord(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("runner: journal %s: encoding a record: %w", j.path, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock := lockFile(j.f)
	defer unlock()
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("runner: journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("runner: journal %s: %w", j.path, err)
	}
	return nil
}

// Close closes the journal.
func (j *Journal) Close() error { return j.f.Close() }

// MarshalResult encodes r as one JSON line (no embedded newlines, trailing '\n'): the
// journal's record and the output of "sharebench profile cell".
func MarshalResult(r Result) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("runner: cell %s: encoding result: %w", r.Cell.Label, err)
	}
	return buf.Bytes(), nil
}

// ReadJournal reads the records of a journal (not following a symbolic link). Lines that do
// not decode (a record cut short by a crash), records of other kinds and records that fail
// validation are left out; problems says which and why ("line 7: …"), so that the caller can
// warn: their cells run again. A missing file is an empty journal.
func ReadJournal(path string) (records []Result, problems []string, err error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		if _, serr := os.Lstat(path); errors.Is(serr, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	defer f.Close()
	return DecodeResults(f)
}

// DecodeResults reads Result lines from r (a journal, or the output of Slurm or Kubernetes
// tasks). Lines that are not cell records are skipped silently when they are JSON records
// of another kind, and reported in problems otherwise; so are cell records that fail
// validateResult.
func DecodeResults(r io.Reader) (records []Result, problems []string, err error) {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var rec Result
			switch err := json.Unmarshal(t, &rec); {
			case err != nil:
				problems = append(problems, fmt.Sprintf("line %d: not a JSON record (cut short?): %v", n, err))
			case rec.Record != RecordCell:
				// another record kind (a task record of a cluster engine): not ours to read
			default:
				if verr := validateResult(rec); verr != nil {
					problems = append(problems, fmt.Sprintf("line %d: cell %s: %v", n, firstNonEmpty(rec.Cell.Label, rec.Cell.ID), verr))
				} else {
					records = append(records, rec)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return records, problems, nil
		}
		if rerr != nil {
			return records, problems, fmt.Errorf("runner: journal: %w", rerr)
		}
	}
}

// validateResult checks what later steps rely on: a cell ID, a known status and, for ok
// records, positive finite step times and slowdowns for the sides the cell kind has, and
// finite, non-negative memory, throughput and logged step times. One bad record would
// otherwise poison every later profile.
func validateResult(r Result) error {
	if r.Cell.ID == "" {
		return errors.New("no cell id")
	}
	if !r.Status.known() {
		return fmt.Errorf("unknown status %q", r.Status)
	}
	if r.Status != StatusOK {
		return nil
	}
	if r.A == nil || (r.Cell.Kind == KindPair) != (r.B != nil) {
		return fmt.Errorf("ok, but the sides do not match a %s cell", r.Cell.Kind)
	}
	for _, s := range []*Side{r.A, r.B} {
		if s == nil {
			continue
		}
		for name, e := range map[string]*Estimate{"solo_ms": s.SoloMs, "pair_ms": s.PairMs, "xi": s.Xi} {
			if e == nil {
				continue
			}
			if !(e.Median > 0) || math.IsInf(e.Median, 0) || !finite(e.CI[0], e.CI[1]) {
				return fmt.Errorf("ok with %s %s median %v (CI %v): not a measurement", s.Member, name, e.Median, e.CI)
			}
		}
		if s.MemReservedBytes < 0 || s.MemDeviceBytes < 0 {
			return fmt.Errorf("ok with negative memory for %s", s.Member)
		}
		for _, x := range []struct {
			name string
			v    float64
		}{{"samples_per_s", s.SamplesPerS}, {"harness_step_ms", s.HarnessStepMs}, {"logged_step_ms", s.LoggedStepMs}} {
			if !(x.v >= 0) || math.IsInf(x.v, 0) {
				return fmt.Errorf("ok with %s %s %v: not a measurement", s.Member, x.name, x.v)
			}
		}
	}
	if r.Cell.Kind == KindSolo && r.A.SoloMs == nil {
		return errors.New("ok solo cell without a solo step time")
	}
	if r.Cell.Kind == KindPair && r.A.PairMs == nil {
		return errors.New("ok pair cell without pair step times")
	}
	return nil
}

// Latest returns the last record of each cell ID: later attempts supersede earlier ones.
func Latest(records []Result) map[string]Result {
	out := make(map[string]Result, len(records))
	for _, r := range records {
		out[r.Cell.ID] = r
	}
	return out
}
