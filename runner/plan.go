package runner

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sharebench/sharebench/trace"
)

// ProjectionInputs are what a projection of a campaign's time needs beyond the campaign: the
// step times and the costs that no step time gives. Every assumption is stated in the output.
type ProjectionInputs struct {
	// StepMs returns the solo time (ms) of one optimizer step of a configuration and where it
	// comes from; ok is false when it is unknown (the projection then fails).
	StepMs func(Member) (ms float64, source string, ok bool)
	// Xi is the slowdown assumed for both members of a pair (ξ > 0). Two jobs that each keep
	// the GPU busy and share it by time-slicing get about half of it each: ξ = 2.
	Xi float64
	// WorkerLoad is the wall time to start a group of warm workers at once (interpreter,
	// imports, CUDA initialisation, model build), or one fresh process.
	WorkerLoad time.Duration
	// RunOverhead is the time of a run that is not its window: the go and stop round trips,
	// the workload's memory report, telemetry and bookkeeping.
	RunOverhead time.Duration
	// Fixed is the time of the shot before the campaign (preflight, selftest); Reserve what it
	// keeps after it (a cell that overruns, packaging). Budget is the whole shot (0: none).
	Fixed, Reserve, Budget time.Duration
	// Done, when set, tells the cells already done (a resumed campaign): they are left out,
	// and so are the warm workers only they need.
	Done func(Cell) bool
}

// CellProjection is the projected time of one cell.
type CellProjection struct {
	Index int    `json:"index"`
	Label string `json:"label"`
	Kind  string `json:"kind"`
	Group string `json:"group"`
	// StepMs are the solo step times of A (and B), RunStepMs their step times in the cell's
	// pair runs (ξ × solo), Steps the steps each member runs in the window (trimmed steps and
	// the step lost to aligning the members included).
	StepMs    []float64 `json:"step_ms"`
	RunStepMs []float64 `json:"run_step_ms"`
	Steps     []int     `json:"steps"`
	Runs      int       `json:"runs"`
	// WindowS is the runs' measurement time, the steps in flight at stop included; SetupS the
	// rest (run overheads; with fresh processes also their start and warm-up).
	WindowS float64 `json:"window_s"`
	SetupS  float64 `json:"setup_s"`
	// Short: at these step times the window ends at max_seconds before the window rule holds.
	Short bool `json:"short,omitempty"`
}

// GroupProjection is the projected cost of making a group of warm workers ready.
type GroupProjection struct {
	Group   string  `json:"group"`
	Workers int     `json:"workers"`
	LoadS   float64 `json:"load_s"`
	WarmS   float64 `json:"warm_s"`
}

// Projection is the projected time of a campaign and of the shot around it.
type Projection struct {
	Campaign string            `json:"campaign"`
	Cells    []CellProjection  `json:"cells"`
	Groups   []GroupProjection `json:"groups,omitempty"`
	Sources  []string          `json:"sources"`
	// Assumptions states every input that is not a step time.
	Assumptions map[string]float64 `json:"assumptions"`
	WindowS     float64            `json:"window_s"`
	SetupS      float64            `json:"setup_s"`
	WorkersS    float64            `json:"workers_s"`
	CampaignS   float64            `json:"campaign_s"`
	ShotS       float64            `json:"shot_s"`
	BudgetS     float64            `json:"budget_s,omitempty"`
	Fits        bool               `json:"fits"`
	Short       int                `json:"short"`
}

// Project computes how long the campaign c would take on a host whose step times in are,
// with c's window rule, repeats, workers and order, as Run executes them: the time of each
// cell's runs (windows sized by the rule from the step times, capped at max_seconds), of
// each group of warm workers (started at once, warmed up one at a time), and of the shot
// around the campaign. It is a projection, never a measurement: the output says which step
// times and assumptions it used.
func Project(c *Campaign, in ProjectionInputs) (Projection, error) {
	if in.StepMs == nil || !(in.Xi > 0) || math.IsInf(in.Xi, 0) {
		return Projection{}, errors.New("runner: projection: need step times and a slowdown ξ > 0")
	}
	if in.WorkerLoad < 0 || in.RunOverhead < 0 || in.Fixed < 0 || in.Reserve < 0 || in.Budget < 0 {
		return Projection{}, errors.New("runner: projection: times must not be negative")
	}
	p := Projection{Campaign: c.Name, Assumptions: map[string]float64{
		"xi": in.Xi, "worker_load_s": in.WorkerLoad.Seconds(), "run_overhead_s": in.RunOverhead.Seconds(),
		"fixed_s": in.Fixed.Seconds(), "reserve_s": in.Reserve.Seconds(),
	}}
	sources := map[string]bool{}
	step := func(m Member) (float64, error) {
		ms, src, ok := in.StepMs(m)
		if !ok || !(ms > 0) || math.IsInf(ms, 0) {
			return 0, fmt.Errorf("runner: projection of campaign %s: no step time for %s", c.Name, m)
		}
		if !sources[src] {
			sources[src] = true
			p.Sources = append(p.Sources, src)
		}
		return ms, nil
	}
	warmS := func(ms float64) float64 {
		n := max(c.Warmup.Steps, int(math.Ceil(c.Warmup.Seconds*1000/ms)), 1)
		return float64(n) * ms / 1000
	}
	var cells []Cell
	for _, cell := range c.Cells() {
		if in.Done == nil || !in.Done(cell) {
			cells = append(cells, cell)
		}
	}
	alive := map[string]bool{}
	group := ""
	for ci, cell := range cells {
		if c.Workers == WorkersWarm && workerGroup(c, cell) != group {
			// As Run does: retire what no later cell needs, start what this group needs.
			group = workerGroup(c, cell)
			keep := map[string]bool{}
			for _, later := range cells[ci:] {
				for _, k := range workerKeys(later) {
					keep[k.String()] = true
				}
			}
			for k := range alive {
				if !keep[k] {
					delete(alive, k)
				}
			}
			g := GroupProjection{Group: group}
			for _, later := range cells[ci:] {
				if workerGroup(c, later) != group {
					continue
				}
				for _, k := range workerKeys(later) {
					if alive[k.String()] {
						continue
					}
					alive[k.String()] = true
					ms, err := step(k.m)
					if err != nil {
						return p, err
					}
					g.Workers++
					g.WarmS += warmS(ms)
				}
			}
			if g.Workers > 0 {
				g.LoadS = in.WorkerLoad.Seconds()
			}
			p.Groups = append(p.Groups, g)
			p.WorkersS += g.LoadS + g.WarmS
		}
		cp := CellProjection{Index: cell.Index, Label: cell.Label, Kind: cell.Kind, Group: workerGroup(c, cell)}
		for _, m := range cellMembers(cell) {
			ms, err := step(m)
			if err != nil {
				return p, err
			}
			cp.StepMs = append(cp.StepMs, ms)
		}
		for _, run := range plans(c, cell, c.Repeats) {
			var per []float64
			for _, m := range run.members {
				ms, _ := step(m)
				if run.kind == KindPair {
					ms *= in.Xi
				}
				per = append(per, ms)
			}
			w, steps, short := projectWindow(c.Window, per)
			if run.kind == KindPair || cell.Kind == KindSolo {
				cp.RunStepMs, cp.Steps = per, steps
			}
			cp.Runs++
			cp.WindowS += w
			cp.SetupS += in.RunOverhead.Seconds()
			if c.Workers != WorkersWarm {
				for _, m := range run.members {
					ms, _ := step(m)
					cp.SetupS += in.WorkerLoad.Seconds() + warmS(ms)
				}
			}
			cp.Short = cp.Short || short
		}
		if cp.Short {
			p.Short++
		}
		p.WindowS += cp.WindowS
		p.SetupS += cp.SetupS
		p.Cells = append(p.Cells, cp)
	}
	p.CampaignS = p.WindowS + p.SetupS + p.WorkersS
	p.ShotS = in.Fixed.Seconds() + p.CampaignS + in.Reserve.Seconds()
	p.BudgetS = in.Budget.Seconds()
	p.Fits = in.Budget == 0 || p.ShotS <= p.BudgetS
	return p, nil
}

// cellMembers returns the configurations of a cell.
func cellMembers(cell Cell) []Member {
	if cell.B == nil {
		return []Member{cell.A}
	}
	return []Member{cell.A, *cell.B}
}

// projectWindow applies the window rule (WindowSatisfied) to members that step every per[i]
// ms: each needs n = max(floor_steps, min(min_steps, ⌈min_seconds / step⌉)) kept steps, plus
// trim steps at each end and, in a pair, the step lost to aligning the members; the run stops
// when the slowest has them, or at max_seconds (short) once every member keeps a step, and then
// waits for the steps in flight. It returns the window's seconds and each member's steps.
func projectWindow(w Window, per []float64) (seconds float64, steps []int, short bool) {
	var need, least, slowest float64
	extra := 2*w.Trim + len(per) - 1
	for _, ms := range per {
		n := w.FloorSteps
		if w.MinSeconds > 0 {
			n = max(n, min(w.MinSteps, int(math.Ceil(w.MinSeconds*1000/ms))))
		} else {
			n = max(n, 1)
		}
		steps = append(steps, n+extra)
		need = max(need, float64(n+extra)*ms/1000)
		least = max(least, float64(1+extra)*ms/1000)
		slowest = max(slowest, ms/1000)
	}
	if need > w.MaxSeconds {
		need, short = max(w.MaxSeconds, least), true
		for i, ms := range per {
			steps[i] = max(int(need*1000/ms), 1+extra)
		}
	}
	return need + slowest, steps, short
}

// MuriTestbedTrace is Muri's 400-job V100 testbed trace in the repository, the source of the
// published step times.
var MuriTestbedTrace = filepath.Join("data", "traces", "muri-testbed", "cluster_trace.csv")

// StepTimes returns the step times of a projection from source:
//   - "published": per model, the median GPU part of an iteration (resource_time_1) over the
//     model's rows of Muri's V100 testbed trace at muriTrace, whose rows the SJF-BSBF authors'
//     trace reuses; the rest of those iterations is data loading and the network, which the
//     synthetic single-GPU workloads do not have;
//   - "iteration": the whole iteration (trace.DefaultModels, the medians of the same trace's
//     iteration_time), a bound far above any step of these workloads;
//   - "measured:DIR": the solo step times in the journal of the campaign directory DIR where it
//     has them, the published ones elsewhere.
//
// Published times are scaled by batch for other batches and are the same for every sub-batch
// of a batch (gradient accumulation keeps the samples of a step).
func StepTimes(source, muriTrace string) (func(Member) (float64, string, bool), error) {
	perBatch := func(table map[string]trace.ModelSpec, what string) func(Member) (float64, string, bool) {
		return func(m Member) (float64, string, bool) {
			spec, ok := table[m.Model]
			if !ok || spec.Batch <= 0 {
				return 0, "", false
			}
			return float64(spec.IterTime) / float64(time.Millisecond) * float64(m.Batch) / float64(spec.Batch), what, true
		}
	}
	if source == "iteration" {
		iteration := map[string]trace.ModelSpec{}
		for _, m := range trace.DefaultModels() {
			iteration[m.Name] = m
		}
		return perBatch(iteration, "iteration: median iteration_time per model in Muri's 400-job V100 testbed trace (sharebench trace gen's built-in table; data loading and network included), scaled by batch, the same for every sub-batch"), nil
	}
	gpuPart, err := MuriGPUTimes(muriTrace)
	if err != nil {
		return nil, err
	}
	pub := perBatch(gpuPart, "published: median GPU part of an iteration (resource_time_1) per model in Muri's 400-job V100 testbed trace "+filepath.ToSlash(muriTrace)+", scaled by batch, the same for every sub-batch")
	if source == "published" {
		return pub, nil
	}
	dir, ok := strings.CutPrefix(source, "measured:")
	if !ok || dir == "" {
		return nil, fmt.Errorf("step times %q: want published, iteration or measured:DIR", source)
	}
	recs, _, err := ReadJournal(filepath.Join(dir, JournalFile))
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("step times: %s: no cell records in %s", dir, JournalFile)
	}
	solo := map[string]float64{}
	for _, r := range Latest(recs) {
		if r.Cell.Kind == KindSolo && r.Status == StatusOK && r.A != nil && r.A.SoloMs != nil {
			solo[r.Cell.A.String()] = r.A.SoloMs.Median
		}
	}
	return func(m Member) (float64, string, bool) {
		if ms, ok := solo[m.String()]; ok {
			return ms, "measured: solo step times in " + dir, true
		}
		return pub(m)
	}, nil
}

// MuriGPUTimes reads Muri's testbed trace and returns, per model, its batch and the median GPU
// part of its iterations (resource_time_1, ms) over the model's rows.
func MuriGPUTimes(path string) (map[string]trace.ModelSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("published step times: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("published step times: %s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, h := range []string{"model_name", "batch_size", "resource_time_1"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("published step times: %s: no column %s (want Muri's trace format)", path, h)
		}
	}
	times, batch := map[string][]float64{}, map[string]int{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("published step times: %s: %w", path, err)
		}
		model, rt, bs := rec[col["model_name"]], rec[col["resource_time_1"]], rec[col["batch_size"]]
		ms, err1 := strconv.ParseFloat(rt, 64)
		b, err2 := strconv.Atoi(bs)
		if err1 != nil || err2 != nil || !(ms > 0) || math.IsInf(ms, 0) || b <= 0 {
			return nil, fmt.Errorf("published step times: %s line %d: resource_time_1 %q, batch_size %q: want positive numbers", path, line, rt, bs)
		}
		if old, ok := batch[model]; ok && old != b {
			return nil, fmt.Errorf("published step times: %s line %d: %s has batches %d and %d", path, line, model, old, b)
		}
		batch[model] = b
		times[model] = append(times[model], ms)
	}
	out := map[string]trace.ModelSpec{}
	for model, xs := range times {
		out[model] = trace.ModelSpec{Name: model, Batch: batch[model], IterTime: time.Duration(Median(xs) * float64(time.Millisecond))}
	}
	return out, nil
}
