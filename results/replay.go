package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files a physical replay adds to its run directory (docs/replay.md).
const (
	SegmentsFile = "segments.csv"
	AttemptsFile = "attempts.csv"
)

// SegmentsColumns and AttemptsColumns are the headers of segments.csv and attempts.csv.
const (
	SegmentsColumns = "job_id,attempt,start_s,end_s,sub_batch,partners,steps,step_s,profile_step_s,ratio,xi_profile,xi_measured,solo_ref"
	AttemptsColumns = "job_id,attempt,model,batch,sub_batch,gpus,iterations,steps,launch_s,first_step_s,end_s,launch_wait_s,stopped,exit"
)

// Decision is one line of decisions.jsonl.
type Decision struct {
	// Line is the 1-based line of the event in its file.
	Line     int
	TS       float64  `json:"t_s"`
	Event    string   `json:"event"`
	Job      int64    `json:"job"`
	GPUs     []string `json:"gpus"`
	SubBatch int      `json:"sub_batch"`
	Partners []int64  `json:"partners"`
	JCTS     float64  `json:"jct_s"`
	Reason   string   `json:"reason"`
}

// ReadDecisions reads a run directory's decisions.jsonl.
func ReadDecisions(dir string) ([]Decision, error) {
	path := filepath.Join(dir, DecisionsFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer f.Close()
	return parseDecisions(f, path)
}

func parseDecisions(r io.Reader, name string) ([]Decision, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out []Decision
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var d Decision
		if err := json.Unmarshal(line, &d); err != nil {
			return nil, fmt.Errorf("results: %s:%d: %w", name, n, err)
		}
		if d.Event == "" {
			return nil, fmt.Errorf("results: %s:%d: no \"event\"", name, n)
		}
		d.Line = n
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results: %s: %w", name, err)
	}
	return out, nil
}

// SegmentRow is one row of segments.csv: a stretch of one launch of a job with one set of
// partners, with its measured and its assumed step time.
type SegmentRow struct {
	JobID        string
	Attempt      int
	StartS, EndS float64
	SubBatch     int
	// Partners are the IDs of the jobs sharing the job's GPUs (none: it ran alone).
	Partners []string
	Steps    int
	// StepS is the measured mean step time; ProfileStepS the one the engine assumed (the
	// profile's exclusive time × XiProfile); Ratio = StepS / ProfileStepS.
	StepS, ProfileStepS, Ratio float64
	XiProfile                  float64
	// XiMeasured is StepS over the solo reference: the job's own measured mean step time alone
	// at the same sub-batch (SoloRef "measured") or, without one, the profile's ("profile").
	XiMeasured float64
	SoloRef    string
}

// ReadSegments reads a replay's segments.csv; a run directory without one (a simulation) gives
// no rows and no error.
func ReadSegments(dir string) ([]SegmentRow, error) {
	path := filepath.Join(dir, SegmentsFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var rows []SegmentRow
	err := readCSV(path, SegmentsColumns, func(r *record) error {
		var s SegmentRow
		var err error
		s.JobID = strings.TrimSpace(r.str("job_id"))
		if s.Partners = strings.Fields(r.str("partners")); len(s.Partners) == 0 {
			s.Partners = nil
		}
		s.SoloRef = strings.TrimSpace(r.str("solo_ref"))
		for _, f := range []struct {
			col string
			p   *int
		}{{"attempt", &s.Attempt}, {"sub_batch", &s.SubBatch}, {"steps", &s.Steps}} {
			if *f.p, err = r.int(f.col); err != nil {
				return err
			}
		}
		for _, f := range []struct {
			col string
			p   *float64
		}{{"start_s", &s.StartS}, {"end_s", &s.EndS}, {"step_s", &s.StepS}, {"profile_step_s", &s.ProfileStepS},
			{"ratio", &s.Ratio}, {"xi_profile", &s.XiProfile}, {"xi_measured", &s.XiMeasured}} {
			if *f.p, err = r.nonNeg(f.col); err != nil {
				return err
			}
		}
		rows = append(rows, s)
		return nil
	})
	return rows, err
}

// AttemptRow is one row of attempts.csv: one launch of a job's workload.
type AttemptRow struct {
	JobID           string
	Attempt         int
	Model           string
	Batch, SubBatch int
	GPUs            []string
	Iterations      int // asked for
	Steps           int // completed
	LaunchS, EndS   float64
	FirstStepS      float64 // −1: no step
	LaunchWaitS     float64 // launch to first step (to the exit without one)
	Stopped         bool    // ended by a preemption
	Exit            string
}

// ReadAttempts reads a replay's attempts.csv; without one it returns no rows and no error.
func ReadAttempts(dir string) ([]AttemptRow, error) {
	path := filepath.Join(dir, AttemptsFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var rows []AttemptRow
	err := readCSV(path, AttemptsColumns, func(r *record) error {
		a := AttemptRow{JobID: strings.TrimSpace(r.str("job_id")), Model: strings.TrimSpace(r.str("model")),
			GPUs: strings.Fields(r.str("gpus")), Exit: strings.TrimSpace(r.str("exit"))}
		var err error
		for _, f := range []struct {
			col string
			p   *int
		}{{"attempt", &a.Attempt}, {"batch", &a.Batch}, {"sub_batch", &a.SubBatch}, {"iterations", &a.Iterations}, {"steps", &a.Steps}} {
			if *f.p, err = r.int(f.col); err != nil {
				return err
			}
		}
		for _, f := range []struct {
			col string
			p   *float64
		}{{"launch_s", &a.LaunchS}, {"end_s", &a.EndS}, {"launch_wait_s", &a.LaunchWaitS}} {
			if *f.p, err = r.nonNeg(f.col); err != nil {
				return err
			}
		}
		if a.FirstStepS, err = r.float("first_step_s"); err != nil {
			return err
		}
		switch s := strings.TrimSpace(r.str("stopped")); s {
		case "true", "false":
			a.Stopped = s == "true"
		default:
			return r.errorf("stopped", "want true or false, got %q", s)
		}
		rows = append(rows, a)
		return nil
	})
	return rows, err
}
