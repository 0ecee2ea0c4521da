package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharebench/sharebench/results"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// Files of a replay run directory besides the simulator's (docs/replay.md).
const (
	ManifestFile = "replay.json"
	FailureFile  = "failure.json"
	StepsDir     = "steps"
	SimDir       = "sim"
	FidelityDir  = "fidelity"
	// OutKind is the marker kind of a replay directory (internal/outdir).
	OutKind = "replay"
)

// Manifest is replay.json: how the replay ran.
type Manifest struct {
	Command   string   `json:"command"`
	Backend   string   `json:"backend"`
	Device    string   `json:"device"`
	Devices   []string `json:"devices,omitempty"`
	Program   []string `json:"program,omitempty"`
	Image     string   `json:"image,omitempty"`
	Trace     string   `json:"trace"`
	Policy    string   `json:"policy"`
	Profile   string   `json:"profile,omitempty"`
	TimeScale float64  `json:"time_scale"`
	Host      string   `json:"host,omitempty"`
	Started   string   `json:"started,omitempty"`
	WallS     float64  `json:"wall_s"`
	Attempts  int      `json:"attempts"`
}

// WriteManifest writes m as indented JSON.
func WriteManifest(w io.Writer, m *Manifest) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(m)
}

// Failure is failure.json: why a replay stopped before its end.
type Failure struct {
	Error    string  `json:"error"`
	AtS      float64 `json:"at_s"`
	Finished int     `json:"finished_jobs"`
	Jobs     int     `json:"jobs"`
}

// WriteFailure writes f as indented JSON.
func WriteFailure(w io.Writer, f *Failure) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(f)
}

// WriteAttempts writes attempts.csv: one row per launch.
func WriteAttempts(w io.Writer, atts []Attempt) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(results.AttemptsColumns + "\n")
	for _, a := range atts {
		first := "-1"
		if a.First >= 0 {
			first = secs(a.First)
		}
		fmt.Fprintf(bw, "%d,%d,%s,%d,%d,%s,%d,%d,%s,%s,%s,%s,%t,%s\n", a.Job, a.N, a.Model, a.Batch, a.SubBatch,
			strings.Join(a.GPUs, " "), a.Target, a.Steps, secs(a.Launch), first, secs(a.End), secs(a.LaunchWait()), a.Stopped,
			strings.ReplaceAll(a.Exit, ",", ";"))
	}
	return bw.Flush()
}

// LaunchWait is the time from the launch to the first step (to the exit when there was none):
// start-up, model build and the first iteration's set-up, which a restart pays again.
func (a Attempt) LaunchWait() time.Duration {
	switch {
	case a.First >= 0:
		return a.First - a.Launch
	case a.End >= 0:
		return a.End - a.Launch
	}
	return 0
}

// WriteSegments writes segments.csv. The measured ξ of a stretch divides its mean step time
// by the job's own mean step time alone at the same sub-batch (over all its solo stretches),
// or by the profile's exclusive time when the job never ran alone at that sub-batch.
func WriteSegments(w io.Writer, segs []Segment) error {
	type key struct {
		job trace.JobID
		sub int
	}
	solo := map[key][2]float64{} // sum of step seconds, steps
	for _, s := range segs {
		if len(s.Partners) == 0 && s.Steps > 0 {
			k := key{s.Job, s.SubBatch}
			v := solo[k]
			solo[k] = [2]float64{v[0] + s.StepSum, v[1] + float64(s.Steps)}
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(results.SegmentsColumns + "\n")
	for _, s := range segs {
		if s.Steps == 0 {
			continue
		}
		mean := s.StepSum / float64(s.Steps)
		prof := s.ProfileStep.Seconds()
		ref, src := prof/s.Xi, "profile"
		if v, ok := solo[key{s.Job, s.SubBatch}]; ok {
			ref, src = v[0]/v[1], "measured"
		}
		ps := make([]string, len(s.Partners))
		for i, p := range s.Partners {
			ps[i] = strconv.FormatInt(int64(p), 10)
		}
		fmt.Fprintf(bw, "%d,%d,%s,%s,%d,%s,%d,%s,%s,%s,%s,%s,%s\n", s.Job, s.Attempt, secs(s.Start), secs(s.End), s.SubBatch,
			strings.Join(ps, " "), s.Steps, f6(mean), f6(prof), f4(ratio(mean, prof)), f4(s.Xi), f4(ratio(mean, ref)), src)
	}
	return bw.Flush()
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
func f6(v float64) string         { return strconv.FormatFloat(v, 'f', 6, 64) }
func f4(v float64) string         { return strconv.FormatFloat(v, 'f', 4, 64) }

// Measured puts what the processes measured into a replay's summary: the restart time is
// the launch wait of every relaunch after a preemption, and notes say how long launches took.
func Measured(s *sim.Summary, atts []Attempt, backend string) {
	var restart, launch time.Duration
	relaunches := 0
	for _, a := range atts {
		if a.N > 1 {
			restart += a.LaunchWait()
			relaunches++
		}
		launch += a.LaunchWait()
	}
	s.RestartS = float64(restart.Round(time.Millisecond)) / 1e9
	s.RestartCost = "measured"
	if len(atts) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("physical replay (%s backend): %d launches, %d after a preemption; a launch took %.1f s on average from the process start to its first step, a cost the simulation does not charge to a job's first start",
			backend, len(atts), relaunches, (launch/time.Duration(len(atts))).Seconds()))
	}
	s.Notes = slices.Clip(s.Notes)
}
