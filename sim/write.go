package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/internal/tmpdir"
)

// Output file names of a run directory (docs/results-format.md).
const (
	SummaryFile   = "summary.json"
	JobsFile      = "jobs.csv"
	UtilFile      = "util.csv"
	DecisionsFile = "decisions.jsonl"
)

// WriteJobs writes jobs.csv.
func WriteJobs(w io.Writer, jobs []JobResult) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("job_id,model,num_gpu,submit_s,start_s,end_s,jct_s,queue_s,solo_s,shared_s,preemptions,sub_batch,batch\n")
	var b []byte
	for _, j := range jobs {
		b = strconv.AppendInt(b[:0], int64(j.ID), 10)
		b = append(b, ',')
		b = appendCSV(b, j.Model)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(j.GPUs), 10)
		for _, d := range [...]int64{int64(j.Submit), int64(j.Start), int64(j.End), int64(j.JCT), int64(j.Queue), int64(j.Solo), int64(j.Shared)} {
			b = append(b, ',')
			b = appendExactSeconds(b, time.Duration(d))
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(j.Preempts), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(j.SubBatch), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(j.Batch), 10)
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}

// appendCSV quotes a field when it contains a separator, quote or newline.
func appendCSV(b []byte, s string) []byte {
	needs := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
			needs = true
			break
		}
	}
	if !needs {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// WriteUtil writes util.csv.
func WriteUtil(w io.Writer, rows []UtilRow) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("t_s,busy_gpus,shared_gpus,running_jobs,pending_jobs\n")
	var b []byte
	for _, r := range rows {
		b = appendSeconds(b[:0], r.T)
		for _, v := range [...]float64{r.Busy, r.Shared, r.Running, r.Pending} {
			b = append(b, ',')
			b = strconv.AppendFloat(b, round3(v), 'f', 3, 64)
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	return bw.Flush()
}

// WriteSummary writes summary.json with two-space indentation.
func WriteSummary(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// RunDir is a run directory being written: files go to a temporary directory next to the final
// one, and Commit renames it into place, so an error never leaves a half-written run behind.
// The temporary directory is held locked while this process lives (package tmpdir): what a
// SIGKILL leaves behind is removed by the next run writing next to it.
type RunDir struct {
	final string
	tmp   *tmpdir.Dir
}

// CreateRunDir starts writing the run directory dir. It first removes the temporary
// directories that killed runs of the same name left behind.
func CreateRunDir(dir string) (*RunDir, error) {
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	tmp, err := tmpdir.Create(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	return &RunDir{final: dir, tmp: tmp}, nil
}

// Path returns the temporary path of a file in the run directory.
func (d *RunDir) Path(name string) string { return filepath.Join(d.tmp.Path(), name) }

// WriteFile writes one file of the run directory through fn.
func (d *RunDir) WriteFile(name string, fn func(io.Writer) error) error {
	f, err := os.Create(d.Path(name))
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	err = fn(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("output: %s: %w", name, err)
	}
	return nil
}

// Commit moves the finished directory into place, replacing an older run of the same name.
func (d *RunDir) Commit() error {
	tmp := d.tmp.Path()
	old := ""
	if _, err := os.Stat(d.final); err == nil {
		// The old run goes aside under the temporary prefix, so that if this process dies
		// before removing it the next run's clean-up does.
		old = tmp + ".old"
		if err := os.Rename(d.final, old); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	if err := os.Rename(tmp, d.final); err != nil {
		if old != "" {
			os.Rename(old, d.final)
		}
		return fmt.Errorf("output: %w", err)
	}
	d.tmp.Release()
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// Abort removes the temporary directory.
func (d *RunDir) Abort() { d.tmp.Remove() }

// WriteResult writes summary.json, jobs.csv and util.csv of r into d.
func (d *RunDir) WriteResult(r *Result) error {
	if err := d.WriteFile(SummaryFile, func(w io.Writer) error { return WriteSummary(w, &r.Summary) }); err != nil {
		return err
	}
	if err := d.WriteFile(JobsFile, func(w io.Writer) error { return WriteJobs(w, r.Jobs) }); err != nil {
		return err
	}
	return d.WriteFile(UtilFile, func(w io.Writer) error { return WriteUtil(w, r.Util) })
}
