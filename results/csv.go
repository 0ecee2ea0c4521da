package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// JobsColumns and UtilColumns are the documented headers of jobs.csv and util.csv. Readers
// require every documented column, in any order, and ignore extra columns.
const (
	JobsColumns = "job_id,model,num_gpu,submit_s,start_s,end_s,jct_s,queue_s,solo_s,shared_s,preemptions,sub_batch,batch"
	UtilColumns = "t_s,busy_gpus,shared_gpus,running_jobs,pending_jobs"
)

// record is one CSV data row with access by column name and positioned errors.
type record struct {
	name   string
	cr     *csv.Reader
	cols   map[string]int
	fields []string
}

// errorf formats an error positioned at the field of column col: name:line:column: col: msg.
func (r *record) errorf(col, format string, args ...any) error {
	line, c := r.cr.FieldPos(r.cols[col])
	return fmt.Errorf("results: %s:%d:%d: %s: %s", r.name, line, c, col, fmt.Sprintf(format, args...))
}

func (r *record) str(col string) string { return r.fields[r.cols[col]] }

// float parses a finite number.
func (r *record) float(col string) (float64, error) {
	s := strings.TrimSpace(r.str(col))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errorf(col, "want a finite number, got %q", s)
	}
	return v, nil
}

// nonNeg parses a finite number ≥ 0.
func (r *record) nonNeg(col string) (float64, error) {
	v, err := r.float(col)
	if err == nil && v < 0 {
		err = r.errorf(col, "want a number ≥ 0, got %v", v)
	}
	return v, err
}

// int parses an integer ≥ 0.
func (r *record) int(col string) (int, error) {
	s := strings.TrimSpace(r.str(col))
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, r.errorf(col, "want an integer ≥ 0, got %q", s)
	}
	return v, nil
}

// readCSV opens path, checks its header against the comma-separated columns want and calls
// row for every data record.
func readCSV(path, want string, row func(*record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	return parseCSV(f, path, want, row)
}

// parseCSV is readCSV on a reader; name labels errors.
func parseCSV(in io.Reader, name, want string, row func(*record) error) error {
	cr := csv.NewReader(in)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("results: %s: empty file (want header %s)", name, want)
	}
	if err != nil {
		return csvError(name, err)
	}
	cols := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		if _, dup := cols[h]; dup {
			line, c := cr.FieldPos(i)
			return fmt.Errorf("results: %s:%d:%d: duplicate column %q", name, line, c, h)
		}
		cols[h] = i
	}
	for _, w := range strings.Split(want, ",") {
		if _, ok := cols[w]; !ok {
			return fmt.Errorf("results: %s:1: missing column %q (want header %s)", name, w, want)
		}
	}
	r := &record{name: name, cr: cr, cols: cols}
	for {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvError(name, err)
		}
		r.fields = fields
		if err := row(r); err != nil {
			return err
		}
	}
}

// csvError positions an encoding/csv error as name:line:column.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("results: %s:%d:%d: %w", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("results: %s: %w", name, err)
}

func readJobs(path string) ([]JobRow, error) {
	var rows []JobRow
	err := readCSV(path, JobsColumns, func(r *record) error {
		j, err := jobRow(r)
		if err == nil {
			rows = append(rows, j)
		}
		return err
	})
	return rows, err
}

func jobRow(r *record) (JobRow, error) {
	var j JobRow
	var err error
	if j.JobID = strings.TrimSpace(r.str("job_id")); j.JobID == "" {
		return j, r.errorf("job_id", "empty")
	}
	j.Model = strings.TrimSpace(r.str("model"))
	ints := []struct {
		col string
		p   *int
	}{{"num_gpu", &j.NumGPU}, {"preemptions", &j.Preemptions}, {"sub_batch", &j.SubBatch}, {"batch", &j.Batch}}
	for _, f := range ints {
		if *f.p, err = r.int(f.col); err != nil {
			return j, err
		}
	}
	floats := []struct {
		col string
		p   *float64
	}{
		{"submit_s", &j.SubmitS}, {"start_s", &j.StartS}, {"end_s", &j.EndS}, {"jct_s", &j.JCTS},
		{"queue_s", &j.QueueS}, {"solo_s", &j.SoloS}, {"shared_s", &j.SharedS},
	}
	for _, f := range floats {
		if *f.p, err = r.nonNeg(f.col); err != nil {
			return j, err
		}
	}
	return j, nil
}

func readUtil(path string) ([]UtilRow, error) {
	var rows []UtilRow
	err := readCSV(path, UtilColumns, func(r *record) error {
		var u UtilRow
		fields := []struct {
			col string
			p   *float64
		}{
			{"t_s", &u.TS}, {"busy_gpus", &u.BusyGPUs}, {"shared_gpus", &u.SharedGPUs},
			{"running_jobs", &u.RunningJobs}, {"pending_jobs", &u.PendingJobs},
		}
		for _, f := range fields {
			v, err := r.nonNeg(f.col)
			if err != nil {
				return err
			}
			*f.p = v
		}
		rows = append(rows, u)
		return nil
	})
	return rows, err
}
