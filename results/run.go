package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// File names inside a run directory.
const (
	SummaryFile   = "summary.json"
	JobsFile      = "jobs.csv"
	UtilFile      = "util.csv"
	DecisionsFile = "decisions.jsonl"
)

// Well-known label keys (summary.json "labels", set by "sharebench reproduce").
const (
	// LabelExperiment names the experiment a run belongs to, e.g. "E2".
	LabelExperiment = "experiment"
	// LabelTrace names the trace for grouping; it overrides the "trace" file name.
	LabelTrace = "trace"
	// LabelVariant names a policy variant (an ablation setting); analysis uses it instead of
	// the policy name as the series name when present.
	LabelVariant = "variant"
)

// Summary is summary.json: the configuration of a run and its headline metrics. The JSON tags
// are those of docs/results-format.md; unknown fields are ignored so that newer simulators
// can add fields.
type Summary struct {
	// Policy is the registry name of the policy, e.g. "sjf-bsbf".
	Policy string `json:"policy"`
	// PolicySpec is the policy with its parameters, e.g. `sjf-bsbf{"preempt":false}`.
	PolicySpec string `json:"policy_spec"`
	// Trace is the file name of the replayed trace.
	Trace string `json:"trace"`
	// Cluster is the cluster shape, e.g. "8x8" (nodes × GPUs per node).
	Cluster string `json:"cluster"`
	// GPUs is the total number of GPUs.
	GPUs int `json:"gpus"`
	// GPUMemGiB is the memory per GPU in GiB.
	GPUMemGiB float64 `json:"gpu_mem_gib"`
	// IntervalS is the scheduling interval in seconds; 0 means event-driven.
	IntervalS float64 `json:"interval_s"`
	// Seed is the random seed of the run.
	Seed uint64 `json:"seed"`
	// Profile is the file name of the interference profile.
	Profile string `json:"profile"`
	// ProfileSource is the profile's source (measured, authors, gavel, ...).
	ProfileSource string `json:"profile_source"`
	// Jobs is the number of jobs in the run.
	Jobs int `json:"jobs"`
	// DroppedJobs counts trace jobs the simulator could not run.
	DroppedJobs int `json:"dropped_jobs"`
	// AvgJCTS is the average job completion time in seconds.
	AvgJCTS float64 `json:"avg_jct_s"`
	// P50JCTS is the median JCT (authors' definition sorted(jct)[int(q*n)]).
	P50JCTS float64 `json:"p50_jct_s"`
	// P95JCTS is the 95th-percentile JCT (authors' definition).
	P95JCTS float64 `json:"p95_jct_s"`
	// P99JCTS is the 99th-percentile JCT (authors' definition).
	P99JCTS float64 `json:"p99_jct_s"`
	// MakespanS is the time from the trace start until the last job finishes.
	MakespanS float64 `json:"makespan_s"`
	// AvgQueueS is the average time jobs spent pending.
	AvgQueueS float64 `json:"avg_queue_s"`
	// GPUUtil is the time-average fraction of GPUs holding at least one job, in [0, 1].
	GPUUtil float64 `json:"gpu_util"`
	// SharedJobs counts jobs that ran co-located with another job at some point.
	SharedJobs int `json:"shared_jobs"`
	// SubBatchSharedJobs counts jobs that shared only thanks to a smaller sub-batch.
	SubBatchSharedJobs int `json:"subbatch_shared_jobs"`
	// Preemptions is the total number of preemptions.
	Preemptions int `json:"preemptions"`
	// RestartS is the restart time charged after preemptions, in seconds; RestartCost says how
	// it was set (auto, profile, lineage, off, or seconds).
	RestartS    float64 `json:"restart_s"`
	RestartCost string  `json:"restart_cost"`
	// MissingPairs counts distinct ordered configuration pairs absent from the profile.
	MissingPairs int `json:"missing_pairs"`
	// Labels are free-form key/value pairs set by "sharebench reproduce".
	Labels Labels `json:"labels,omitempty"`
	// Notes are caveats the simulator reported.
	Notes []string `json:"notes"`
	// ByModel and ByGPUs break average JCT and queueing delay down by model and by GPU demand.
	ByModel []Breakdown `json:"by_model"`
	ByGPUs  []Breakdown `json:"by_gpus"`
	// The metrics a sweep adds (bench.RunMetrics), NaN in a summary without them (one written
	// by "sharebench simulate" of an older version, say): the per-job slowdown JCT / solo time
	// (mean, p95, p99) and Jain's fairness index over it, and the effective GPU utilization
	// Σ GPUs·solo / (GPUs × makespan).
	SlowdownMean     float64 `json:"slowdown_mean"`
	SlowdownP95      float64 `json:"slowdown_p95"`
	SlowdownP99      float64 `json:"slowdown_p99"`
	SlowdownFairness float64 `json:"slowdown_fairness"`
	EffectiveGPUUtil float64 `json:"effective_gpu_util"`
	// SubBatchJobs counts the jobs that ran a sub-batch smaller than their batch; -1 when the
	// summary does not say.
	SubBatchJobs int `json:"subbatch_jobs"`
	// Counterfactual says how the run's profile departs from measurements on purpose (ξ
	// scaled, made symmetric); empty for a measured or derived one.
	Counterfactual string `json:"counterfactual,omitempty"`
}

// Breakdown is the average JCT and queueing delay of one group of a run's jobs.
type Breakdown struct {
	Key       string  `json:"key"`
	Jobs      int     `json:"jobs"`
	AvgJCTS   float64 `json:"avg_jct_s"`
	AvgQueueS float64 `json:"avg_queue_s"`
}

// Labels are the free-form labels of a run. In JSON the values may be strings, numbers or
// booleans; numbers and booleans keep their literal text (e.g. 48, 0.5, true).
type Labels map[string]string

// UnmarshalJSON accepts an object whose values are strings, numbers or booleans.
func (l *Labels) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("labels: %w", err)
	}
	if raw == nil {
		*l = nil
		return nil
	}
	out := make(Labels, len(raw))
	for k, v := range raw {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("labels: %q: %w", k, err)
			}
			out[k] = s
		case string(v) == "true" || string(v) == "false":
			out[k] = string(v)
		default:
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				return fmt.Errorf("labels: %q: want a string, number or boolean, got %s", k, v)
			}
			out[k] = string(v)
		}
	}
	*l = out
	return nil
}

// JobRow is one row of jobs.csv. Times are seconds from the trace start.
type JobRow struct {
	// JobID is the job's id as written (trace ids are usually integers).
	JobID string
	// Model is the job's model name.
	Model string
	// NumGPU is the job's GPU count (gang size).
	NumGPU int
	// SubmitS is the submission time.
	SubmitS float64
	// StartS is the first start time.
	StartS float64
	// EndS is the completion time.
	EndS float64
	// JCTS is the job completion time, EndS − SubmitS.
	JCTS float64
	// QueueS is the total time pending, including waits after preemptions.
	QueueS float64
	// SoloS is iterations × exclusive iteration time.
	SoloS float64
	// SharedS is the time run while co-located with another job.
	SharedS float64
	// Preemptions counts the job's preemptions.
	Preemptions int
	// SubBatch is the sub-batch of the job's last placement.
	SubBatch int
	// Batch is the job's per-GPU batch.
	Batch int
}

// UtilRow is one row of util.csv: averages over one time bucket starting at TS.
type UtilRow struct {
	// TS is the bucket's start in seconds.
	TS float64
	// BusyGPUs is the average number of GPUs holding at least one job.
	BusyGPUs float64
	// SharedGPUs is the average number of GPUs holding two or more jobs.
	SharedGPUs float64
	// RunningJobs is the average number of running jobs.
	RunningJobs float64
	// PendingJobs is the average number of pending jobs.
	PendingJobs float64
}

// Run is one loaded run directory.
type Run struct {
	// Dir is the directory the run was loaded from, as given.
	Dir string
	// Summary is summary.json.
	Summary Summary
	// Jobs are the rows of jobs.csv in file order.
	Jobs []JobRow
	// Util are the rows of util.csv in file order.
	Util []UtilRow
}

// Label returns the value of a label and whether it is set.
func (r *Run) Label(key string) (string, bool) {
	v, ok := r.Summary.Labels[key]
	return v, ok
}

// Trace returns the trace name used for grouping: the "trace" label when present, else the
// summary's trace field.
func (r *Run) Trace() string {
	if v, ok := r.Label(LabelTrace); ok && v != "" {
		return v
	}
	return r.Summary.Trace
}

// Experiment returns the "experiment" label, or "" when absent.
func (r *Run) Experiment() string {
	v, _ := r.Label(LabelExperiment)
	return v
}

// LoadRun reads the run directory dir: summary.json, jobs.csv and util.csv, all required.
func LoadRun(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	s, err := readSummary(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, err
	}
	r.Summary = *s
	if r.Jobs, err = readJobs(filepath.Join(dir, JobsFile)); err != nil {
		return nil, err
	}
	if r.Util, err = readUtil(filepath.Join(dir, UtilFile)); err != nil {
		return nil, err
	}
	return r, nil
}

// LoadSummary loads a run directory's summary.json only (no jobs or utilization), for reports
// over many runs.
func LoadSummary(dir string) (*Run, error) {
	s, err := readSummary(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Summary: *s}, nil
}

// LoadRuns loads each directory with LoadRun, in the order given.
func LoadRuns(dirs ...string) ([]*Run, error) {
	runs := make([]*Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := LoadRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Discover returns the directories at or below root that contain a summary.json, sorted.
// Directories whose names start with "." (such as the simulator's temporary directories) are
// skipped, except root itself.
func Discover(root string) ([]string, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("results: %s is not a directory", root)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root && len(d.Name()) > 0 && d.Name()[0] == '.' {
			return filepath.SkipDir
		}
		st, err := os.Stat(filepath.Join(path, SummaryFile))
		switch {
		case err == nil && st.Mode().IsRegular():
			dirs = append(dirs, path)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("results: discover %s: %w", root, err)
	}
	slices.Sort(dirs)
	return dirs, nil
}

func readSummary(path string) (*Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return parseSummary(data, path)
}

// parseSummary decodes and checks summary.json; name labels errors.
func parseSummary(data []byte, name string) (*Summary, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("results: %s: empty file", name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	nan := math.NaN()
	// The optional metrics stay NaN (or -1) where the file lacks them, so that a table shows
	// "–" rather than a 0 nobody measured.
	s := Summary{SlowdownMean: nan, SlowdownP95: nan, SlowdownP99: nan, SlowdownFairness: nan, EffectiveGPUUtil: nan, SubBatchJobs: -1}
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("results: %s:%w", name, positioned(data, dec, err))
	}
	if dec.More() {
		off := dec.InputOffset()
		line, col := lineCol(data, off)
		return nil, fmt.Errorf("results: %s:%d:%d: trailing data after the JSON object", name, line, col)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("results: %s: %w", name, err)
	}
	// The fields every summary.json must have; the others default to zero.
	for _, k := range []string{"policy", "trace", "jobs", "avg_jct_s", "makespan_s"} {
		if _, ok := keys[k]; !ok {
			return nil, fmt.Errorf("results: %s: missing field %q", name, k)
		}
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("results: %s: %w", name, err)
	}
	return &s, nil
}

// check validates the values of s.
func (s *Summary) check() error {
	if s.Policy == "" {
		return errors.New("policy: empty")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"gpu_mem_gib", s.GPUMemGiB}, {"interval_s", s.IntervalS},
		{"avg_jct_s", s.AvgJCTS}, {"p50_jct_s", s.P50JCTS}, {"p95_jct_s", s.P95JCTS},
		{"p99_jct_s", s.P99JCTS}, {"makespan_s", s.MakespanS}, {"avg_queue_s", s.AvgQueueS},
		{"gpu_util", s.GPUUtil},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s: want a finite number ≥ 0, got %v", f.name, f.v)
		}
	}
	if s.GPUUtil > 1 {
		return fmt.Errorf("gpu_util: want a fraction in [0, 1], got %v", s.GPUUtil)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"gpus", s.GPUs}, {"jobs", s.Jobs}, {"dropped_jobs", s.DroppedJobs},
		{"shared_jobs", s.SharedJobs}, {"preemptions", s.Preemptions}, {"missing_pairs", s.MissingPairs},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: want ≥ 0, got %d", f.name, f.v)
		}
	}
	return nil
}

// positioned formats a JSON decoding error as "line:col: message", the position being that
// of the offending byte (the end of the value for a type error; the end of the data for a
// truncated document).
func positioned(data []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1
	case errors.As(err, &te):
		off = te.Offset - 1
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	}
	line, col := lineCol(data, off)
	return fmt.Errorf("%d:%d: %w", line, col, err)
}

// lineCol returns the 1-based line and column of the byte at index off.
func lineCol(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
