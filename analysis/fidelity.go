package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sharebench/sharebench/results"
)

// FidelityRuns are a physical replay and the simulation of the same trace, profile and policy,
// with the replay's measurements (docs/replay.md).
type FidelityRuns struct {
	Real, Sim       *results.Run
	RealLog, SimLog []results.Decision
	// Segments and Attempts are the replay's segments.csv and attempts.csv (may be empty).
	Segments []results.SegmentRow
	Attempts []results.AttemptRow
}

// JobFidelity compares one job's completion time in the two runs.
type JobFidelity struct {
	ID, Model       string
	GPUs            int
	SimJCT, RealJCT float64
	// Err is (measured − simulated) / simulated; NaN when the simulated JCT is 0.
	Err float64
	// Launch is the job's launch waits (process start to first step) summed over its launches;
	// StepRatio is its measured step time over the profiled one, summed over its segments.
	// Both NaN without measurements.
	Launch, StepRatio float64
}

// Divergence is the first decision at which the two decision logs differ.
type Divergence struct {
	// Index is the decision's position (from 0) among the decisions compared: every event but
	// the arrivals.
	Index int
	// Real and Sim are the differing decisions; nil where that log had ended.
	Real, Sim *results.Decision
	// Why are the likely causes, from the timing of the jobs involved and the measurements.
	Why []string
}

// FidelityReport is how far a simulation is from the physical replay of the same inputs.
type FidelityReport struct {
	Trace, Policy string
	Jobs          []JobFidelity // by job ID
	// Pairs of (simulated, measured) run metrics.
	AvgJCT, P50JCT, P95JCT, Makespan [2]float64
	Preemptions, SharedJobs          [2]int
	// Decisions counts the compared decisions of each log; Same those equal before the first
	// difference.
	Decisions [2]int
	Same      int
	// Divergence is nil when the logs agree decision for decision.
	Divergence *Divergence
	real, sim  *results.Run
}

// decisionKinds are the events compared: every decision and its consequence, not arrivals.
var decisionKinds = []string{"start", "preempt", "finish", "demote", "promote"}

// Fidelity compares a replay with its simulation. Both must hold the same jobs.
func Fidelity(in FidelityRuns) (*FidelityReport, error) {
	if in.Real == nil || in.Sim == nil {
		return nil, fmt.Errorf("analysis: fidelity needs a replay and a simulation")
	}
	rs, ss := &in.Real.Summary, &in.Sim.Summary
	f := &FidelityReport{Trace: rs.Trace, Policy: rs.Policy, real: in.Real, sim: in.Sim,
		AvgJCT: [2]float64{ss.AvgJCTS, rs.AvgJCTS}, P50JCT: [2]float64{ss.P50JCTS, rs.P50JCTS}, P95JCT: [2]float64{ss.P95JCTS, rs.P95JCTS},
		Makespan: [2]float64{ss.MakespanS, rs.MakespanS}, Preemptions: [2]int{ss.Preemptions, rs.Preemptions},
		SharedJobs: [2]int{ss.SharedJobs, rs.SharedJobs}}
	simJobs := map[string]results.JobRow{}
	for _, j := range in.Sim.Jobs {
		simJobs[j.JobID] = j
	}
	if len(in.Real.Jobs) != len(in.Sim.Jobs) {
		return nil, fmt.Errorf("analysis: %s has %d jobs and %s %d: not the same trace", in.Real.Dir, len(in.Real.Jobs), in.Sim.Dir, len(in.Sim.Jobs))
	}
	launch, measured, assumed := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, a := range in.Attempts {
		launch[a.JobID] += a.LaunchWaitS
	}
	for _, s := range in.Segments {
		measured[s.JobID] += s.StepS * float64(s.Steps)
		assumed[s.JobID] += s.ProfileStepS * float64(s.Steps)
	}
	for _, r := range in.Real.Jobs {
		s, ok := simJobs[r.JobID]
		if !ok {
			return nil, fmt.Errorf("analysis: job %s of %s is not in %s: not the same trace", r.JobID, in.Real.Dir, in.Sim.Dir)
		}
		jf := JobFidelity{ID: r.JobID, Model: r.Model, GPUs: r.NumGPU, SimJCT: s.JCTS, RealJCT: r.JCTS,
			Err: relErr(r.JCTS, s.JCTS), Launch: math.NaN(), StepRatio: math.NaN()}
		if v, ok := launch[r.JobID]; ok {
			jf.Launch = v
		}
		if assumed[r.JobID] > 0 {
			jf.StepRatio = measured[r.JobID] / assumed[r.JobID]
		}
		f.Jobs = append(f.Jobs, jf)
	}
	slices.SortFunc(f.Jobs, func(a, b JobFidelity) int { return naturalCompare(a.ID, b.ID) })
	rl, sl := decisionsOnly(in.RealLog), decisionsOnly(in.SimLog)
	f.Decisions = [2]int{len(sl), len(rl)}
	for f.Same < min(len(rl), len(sl)) && sameDecision(rl[f.Same], sl[f.Same]) {
		f.Same++
	}
	if f.Same < max(len(rl), len(sl)) {
		d := &Divergence{Index: f.Same}
		if f.Same < len(rl) {
			d.Real = &rl[f.Same]
		}
		if f.Same < len(sl) {
			d.Sim = &sl[f.Same]
		}
		d.Why = f.explain(d, in)
		f.Divergence = d
	}
	return f, nil
}

func relErr(real, sim float64) float64 {
	if sim == 0 {
		return math.NaN()
	}
	return (real - sim) / sim
}

func decisionsOnly(log []results.Decision) []results.Decision {
	var out []results.Decision
	for _, d := range log {
		if slices.Contains(decisionKinds, d.Event) {
			out = append(out, d)
		}
	}
	return out
}

// sameDecision compares what was decided, not when.
func sameDecision(a, b results.Decision) bool {
	return a.Event == b.Event && a.Job == b.Job && slices.Equal(a.GPUs, b.GPUs) && a.SubBatch == b.SubBatch &&
		slices.Equal(sortedIDs(a.Partners), sortedIDs(b.Partners))
}

func sortedIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// describe is a decision in words: "start job 3 on 0-0 at sub-batch 64 next to job 5".
func describe(d *results.Decision) string {
	if d == nil {
		return "nothing (the log ends)"
	}
	s := fmt.Sprintf("%s job %d at %.1f s", d.Event, d.Job, d.TS)
	if d.Event == "start" {
		s += " on " + strings.Join(d.GPUs, ",")
		if d.SubBatch > 0 {
			s += fmt.Sprintf(" at sub-batch %d", d.SubBatch)
		}
		if len(d.Partners) > 0 {
			var ps []string
			for _, p := range d.Partners {
				ps = append(ps, strconv.FormatInt(p, 10))
			}
			s += " next to job " + strings.Join(ps, ", ")
		}
	}
	return s
}

// explain names the likely causes of a divergence: when the jobs involved reached that event
// in the other run, the largest departure of a measured step time from the profile before it,
// and the launch times, which the simulation does not model.
func (f *FidelityReport) explain(d *Divergence, in FidelityRuns) []string {
	why := []string{fmt.Sprintf("replay: %s; simulation: %s", describe(d.Real), describe(d.Sim))}
	at := math.Inf(1)
	for _, x := range []*results.Decision{d.Real, d.Sim} {
		if x == nil {
			continue
		}
		if x == d.Real {
			at = x.TS
		}
		other, mine := in.SimLog, "replay"
		if x == d.Sim {
			other, mine = in.RealLog, "simulation"
		}
		for i := range other {
			o := &other[i]
			if o.Event == x.Event && o.Job == x.Job {
				theirs := map[string]string{"replay": "simulation", "simulation": "replay"}[mine]
				why = append(why, fmt.Sprintf("job %d: %s at %.1f s in the %s, at %.1f s in the %s", x.Job, x.Event, x.TS, mine, o.TS, theirs))
				break
			}
		}
	}
	// The stretch that ran furthest from its profiled step time before the divergence,
	// weighted by the time it cost.
	var worst *results.SegmentRow
	worstCost := 0.0
	for i := range in.Segments {
		s := &in.Segments[i]
		if s.StartS > at || s.ProfileStepS <= 0 || math.Abs(s.Ratio-1) < 0.05 {
			continue
		}
		if c := math.Abs(s.StepS-s.ProfileStepS) * float64(s.Steps); c > worstCost {
			worst, worstCost = s, c
		}
	}
	if worst != nil {
		where := "alone"
		if len(worst.Partners) > 0 {
			where = "next to job " + strings.Join(worst.Partners, ", ")
		}
		why = append(why, fmt.Sprintf("job %s ran %s from %.1f s to %.1f s at %.2f× its profiled step time (%.4f s measured, %.4f s profiled; ξ measured %.2f, profile %.2f)",
			worst.JobID, where, worst.StartS, worst.EndS, worst.Ratio, worst.StepS, worst.ProfileStepS, worst.XiMeasured, worst.XiProfile))
	} else if len(in.Segments) > 0 {
		why = append(why, "every measured step time before it is within 5% of the profile's")
	}
	var waits []float64
	for _, a := range in.Attempts {
		if a.LaunchS <= at {
			waits = append(waits, a.LaunchWaitS)
		}
	}
	if len(waits) > 0 {
		why = append(why, fmt.Sprintf("the %d launches before it took %.1f s on average from the process start to the first step (the simulation starts a job at once)", len(waits), Mean(waits)))
	}
	return why
}

// Tables returns the summary table and the per-job table.
func (f *FidelityReport) Tables() []Table {
	pct := func(real, sim float64) string { return fmtSigned(100*relErr(real, sim), 1) }
	sum := Table{
		Title:  fmt.Sprintf("Fidelity: %s under %s, simulated vs measured", f.Trace, f.Policy),
		Header: []string{"metric", "simulated", "measured", "error (%)"},
	}
	for _, m := range []struct {
		name string
		v    [2]float64
	}{{"average JCT (s)", f.AvgJCT}, {"median JCT (s)", f.P50JCT}, {"p95 JCT (s)", f.P95JCT}, {"makespan (s)", f.Makespan}} {
		sum.Rows = append(sum.Rows, []string{m.name, fmtFixed(m.v[0], 1), fmtFixed(m.v[1], 1), pct(m.v[1], m.v[0])})
	}
	var abs []float64
	for _, j := range f.Jobs {
		if !math.IsNaN(j.Err) {
			abs = append(abs, math.Abs(j.Err))
		}
	}
	maxAbs := math.NaN()
	if len(abs) > 0 {
		maxAbs = slices.Max(abs)
	}
	sum.Rows = append(sum.Rows,
		[]string{"mean |job JCT error| (%)", "–", "–", fmtFixed(100*Mean(abs), 1)},
		[]string{"max |job JCT error| (%)", "–", "–", fmtFixed(100*maxAbs, 1)},
		[]string{"preemptions", strconv.Itoa(f.Preemptions[0]), strconv.Itoa(f.Preemptions[1]), "–"},
		[]string{"jobs that shared", strconv.Itoa(f.SharedJobs[0]), strconv.Itoa(f.SharedJobs[1]), "–"},
		[]string{"decisions", strconv.Itoa(f.Decisions[0]), strconv.Itoa(f.Decisions[1]), "–"},
		[]string{"same decisions before the first difference", "–", strconv.Itoa(f.Same), "–"},
	)
	sum.Notes = []string{"error = (measured − simulated) / simulated; decisions are every logged event but arrivals (start, preempt, finish, demote, promote), compared by what was decided (job, GPUs, sub-batch, partners), not when."}
	if d := f.Divergence; d != nil {
		sum.Notes = append(sum.Notes, fmt.Sprintf("First divergence at decision %d:", d.Index+1))
		for _, w := range d.Why {
			sum.Notes = append(sum.Notes, "- "+w)
		}
	} else {
		sum.Notes = append(sum.Notes, "The two decision logs agree decision for decision.")
	}
	jobs := Table{
		Title:  "Per-job JCT, simulated vs measured",
		Header: []string{"job", "model", "GPUs", "simulated JCT (s)", "measured JCT (s)", "error (%)", "launch (s)", "step time / profile"},
	}
	for _, j := range f.Jobs {
		jobs.Rows = append(jobs.Rows, []string{j.ID, j.Model, strconv.Itoa(j.GPUs), fmtFixed(j.SimJCT, 1), fmtFixed(j.RealJCT, 1),
			fmtSigned(100*j.Err, 1), fmtFixed(j.Launch, 1), fmtFixed(j.StepRatio, 3)})
	}
	jobs.Notes = []string{"launch: process start to first step, summed over the job's launches; step time / profile: measured over profiled step time (exclusive time × ξ) over all its steps."}
	return []Table{sum, jobs}
}

// Lines is a short summary for a terminal.
func (f *FidelityReport) Lines() []string {
	out := []string{fmt.Sprintf("fidelity: average JCT %.1f s simulated, %.1f s measured (%s%%); makespan %.1f s vs %.1f s (%s%%)",
		f.AvgJCT[0], f.AvgJCT[1], fmtSigned(100*relErr(f.AvgJCT[1], f.AvgJCT[0]), 1),
		f.Makespan[0], f.Makespan[1], fmtSigned(100*relErr(f.Makespan[1], f.Makespan[0]), 1))}
	if d := f.Divergence; d != nil {
		out = append(out, fmt.Sprintf("fidelity: the decisions agree up to decision %d of %d; then %s", d.Index, max(f.Decisions[0], f.Decisions[1]), d.Why[0]))
		for _, w := range d.Why[1:] {
			out = append(out, "fidelity:   "+w)
		}
	} else {
		out = append(out, fmt.Sprintf("fidelity: the decisions agree (%d)", f.Decisions[0]))
	}
	return out
}

// Figures returns the per-job scatter of measured against simulated JCT ("fidelity-jct") and
// both runs' JCT distributions ("fidelity-jct-cdf").
func (f *FidelityReport) Figures() ([]NamedFigure, error) {
	sc, err := f.scatter()
	if err != nil {
		return nil, err
	}
	tag := func(r *results.Run, name string) *results.Run {
		c := *r
		c.Summary.Labels = results.Labels{results.LabelVariant: name}
		c.Summary.Trace = f.Trace
		return &c
	}
	cdf, err := JCTCDF([]*results.Run{tag(f.sim, "simulated"), tag(f.real, "measured")},
		CDFOptions{Title: fmt.Sprintf("JCT distribution, simulated and measured — %s, %s", f.Trace, f.Policy)})
	if err != nil {
		return nil, err
	}
	return []NamedFigure{{Name: "fidelity-jct", Figure: sc}, {Name: "fidelity-jct-cdf", Figure: cdf}}, nil
}

func (f *FidelityReport) scatter() (*Figure, error) {
	var all []float64
	for _, j := range f.Jobs {
		all = append(all, j.SimJCT, j.RealJCT)
	}
	ax, err := newValueAxis(all, true, ScaleAuto, false)
	if err != nil {
		ax, _ = newValueAxis(all, true, ScaleLinear, false)
	}
	p := newPlot(fmt.Sprintf("Per-job JCT, measured vs simulated — %s, %s", f.Trace, f.Policy),
		ax.label("simulated JCT", ""), ax.label("measured JCT", ""))
	p.X.Tick.Marker, p.Y.Tick.Marker = ax.ticker(), ax.ticker()
	lo, hi := math.Inf(1), math.Inf(-1)
	pts := make(plotter.XYs, 0, len(f.Jobs))
	for _, j := range f.Jobs {
		x, y := ax.pos(j.SimJCT), ax.pos(j.RealJCT)
		pts = append(pts, plotter.XY{X: x, Y: y})
		lo, hi = min(lo, x, y), max(hi, x, y)
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("analysis: fidelity: no jobs")
	}
	if !ax.log {
		lo = 0
	}
	sty := styles([]string{"jobs", "equal JCT"})
	diag, err := lineFor(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}}, sty["equal JCT"])
	if err != nil {
		return nil, err
	}
	diag.Color = fallbackColors[0]
	diag.Width = vg.Points(0.8)
	diag.Dashes = dashPattern(1)
	dots, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	dots.GlyphStyle = draw.GlyphStyle{Color: oiBlue, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	p.Add(diag, dots)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	leg := newLegend()
	leg.Add(fmt.Sprintf("jobs (%d)", len(pts)), dots)
	leg.Add("measured = simulated", diag)
	return single(p, leg, figWidth, figWidth*0.75), nil
}
