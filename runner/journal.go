package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// OpenJournal opens (creating if needed) the journal at path for appending. A last line cut
// short by a crash is terminated, so new records always start on a fresh line.
func OpenJournal(path string) (*Journal, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("runner: journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runner: journal: %w", err)
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

// ReadJournal reads the records of a journal. Lines that do not decode (a record cut short
// by a crash) and records of other kinds are skipped and counted in skipped. A missing file
// is an empty journal.
func ReadJournal(path string) (records []Result, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("runner: journal: %w", err)
	}
	defer f.Close()
	return DecodeResults(f)
}

// DecodeResults reads Result lines from r (a journal, or the output of Slurm or Kubernetes
// tasks), skipping lines that are not cell records.
func DecodeResults(r io.Reader) (records []Result, skipped int, err error) {
	br := bufio.NewReader(r)
	for {
		line, rerr := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var rec Result
			if json.Unmarshal(t, &rec) == nil && rec.Record == RecordCell && rec.Cell.ID != "" {
				records = append(records, rec)
			} else {
				skipped++
			}
		}
		if errors.Is(rerr, io.EOF) {
			return records, skipped, nil
		}
		if rerr != nil {
			return records, skipped, fmt.Errorf("runner: journal: %w", rerr)
		}
	}
}

// Latest returns the last record of each cell ID: later attempts supersede earlier ones.
func Latest(records []Result) map[string]Result {
	out := make(map[string]Result, len(records))
	for _, r := range records {
		out[r.Cell.ID] = r
	}
	return out
}
