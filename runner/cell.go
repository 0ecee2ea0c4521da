package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sharebench/sharebench/runner/gpu"
)

// ResultVersion is the version of the Result record format.
const ResultVersion = 1

// RecordCell is the value of Result.Record.
const RecordCell = "cell"

// Result is the record of one cell: one JSON line in the journal (journal.jsonl) and the
// line "sharebench profile cell --index i" prints. It is self-contained: a dispatcher that
// collects these lines from Slurm or Kubernetes tasks can append them to a journal as they
// are, and profile.json is a function of the campaign and the journal.
type Result struct {
	// Record is always "cell"; readers skip records of other kinds.
	Record   string `json:"record"`
	Version  int    `json:"v"`
	Campaign string `json:"campaign"`
	Cell     Cell   `json:"cell"`
	Status   Status `json:"status"`
	// Reason says why a cell is not ok; StderrTail is the failing process's last output.
	Reason     string `json:"reason,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// A and B summarise the cell's members (B only for pairs).
	A *Side `json:"a,omitempty"`
	B *Side `json:"b,omitempty"`
	// PairThroughput is 1/ξ_A + 1/ξ_B: above 1 sharing raises total throughput.
	PairThroughput float64 `json:"pair_throughput,omitempty"`
	// Mode is the sharing mode in effect: "timeslice", or "mps-observed" when MPS processes
	// were seen during a run (such cells are kept out of timeslice profiles).
	Mode  string   `json:"mode"`
	Notes []string `json:"notes,omitempty"`
	Env   Env      `json:"env"`
	// Backend is the backend that ran the cell; Attempt counts runs of this cell ID.
	Backend string `json:"backend"`
	Attempt int    `json:"attempt"`
	// Started and Finished are metadata only; nothing is computed from them.
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished"`
	Runs     []RunResult `json:"runs"`
}

// Side summarises one member of a cell across its repeats. Step times are milliseconds per
// optimizer step; estimates are medians over repeats with bootstrap 95% CIs.
type Side struct {
	Member Member `json:"member"`
	Impl   string `json:"impl,omitempty"`
	// SoloMs is from this cell's solo runs (solo cells, and pair cells without reuse_solo).
	SoloMs   *Estimate `json:"solo_ms,omitempty"`
	SoloDist *Dist     `json:"solo_dist,omitempty"`
	// PairMs is from the cell's pair runs.
	PairMs   *Estimate `json:"pair_ms,omitempty"`
	PairDist *Dist     `json:"pair_dist,omitempty"`
	// Xi is ξ: per repeat, pair median ÷ solo median of the same repeat.
	Xi *Estimate `json:"xi,omitempty"`
	// MemReservedBytes is the solo peak reserved memory (max over repeats).
	MemReservedBytes int64   `json:"mem_reserved_bytes,omitempty"`
	MemSource        string  `json:"mem_source,omitempty"`
	SamplesPerS      float64 `json:"samples_per_s,omitempty"`
	// HarnessStepMs and LoggedStepMs are medians over runs of the step time computed from
	// t0_ns/t1_ns and of the workload's own step_ms: their ratio is the harness overhead
	// check.
	HarnessStepMs float64 `json:"harness_step_ms,omitempty"`
	LoggedStepMs  float64 `json:"logged_step_ms,omitempty"`
	ShortWindows  int     `json:"short_windows,omitempty"`
}

// Env records the host and software a cell ran on.
type Env struct {
	Hostname    string `json:"hostname,omitempty"`
	GPU         string `json:"gpu,omitempty"`
	GPUUUID     string `json:"gpu_uuid,omitempty"`
	GPUMemBytes int64  `json:"gpu_mem_bytes,omitempty"`
	Driver      string `json:"driver,omitempty"`
	CUDADriver  string `json:"cuda_driver,omitempty"`
	// From the workloads' start events.
	Device       string `json:"device,omitempty"`
	WorkloadGPU  string `json:"workload_gpu,omitempty"`
	Torch        string `json:"torch,omitempty"`
	Torchvision  string `json:"torchvision,omitempty"`
	Transformers string `json:"transformers,omitempty"`
	CUDA         string `json:"cuda,omitempty"`
	CuDNN        string `json:"cudnn,omitempty"`
	Python       string `json:"python,omitempty"`
	Telemetry    string `json:"telemetry,omitempty"`
	// MPS is what DetectMPS found on the host before the campaign.
	MPS *gpu.MPSStatus `json:"mps,omitempty"`
}

// CellOptions configures RunCell.
type CellOptions struct {
	// OutDir receives the raw files under cells/<cell dir>/ (required).
	OutDir string
	// GPUs pins the cell (default: the campaign's first GPU).
	GPUs []string
	// Sampler records telemetry during measurement windows (nil: none). It is used from
	// one goroutine at a time per RunCell call.
	Sampler gpu.Sampler
	// DeviceIndex selects the telemetry samples of the cell's GPUs (nil: all).
	DeviceIndex []int
	Logger      *slog.Logger
	// Solo returns the result of the solo cell of a configuration, if known: pair cells use
	// it with reuse_solo (solo step times) and for the memory prediction.
	Solo func(Member) (Result, bool)
	// GPUMemBytes enables the pair memory prediction (campaign gpu_mem_bytes wins).
	GPUMemBytes int64
	// Force runs pairs predicted not to fit.
	Force bool
	// Attempt is recorded in the result (1 for the first run of a cell ID).
	Attempt int
	// Env is the host record embedded in the result; start-event facts are added to it.
	Env Env
}

// RunCell runs cell index of the resolved campaign c on backend b and returns its record.
// Per-cell failures (OOM, crash, hang, malformed stream) are reported in the Result; the
// error is for cancellation and infrastructure failures only. This is the unit of work of
// every dispatcher ("sharebench profile cell --index i").
func RunCell(ctx context.Context, c *Campaign, index int, b Backend, opt CellOptions) (Result, error) {
	cell, err := c.CellByIndex(index)
	if err != nil {
		return Result{}, err
	}
	return runCell(ctx, c, cell, b, opt)
}

// plans returns the runs of a cell in execution order: R repeats in ABBA order (solo-A,
// solo-B, pair; then pair, solo-B, solo-A; ...). Solo-B is skipped when B has A's
// configuration, and pair cells with reuse_solo run only their pairs.
func plans(c *Campaign, cell Cell) []runPlan {
	var out []runPlan
	for r := 0; r < c.Repeats; r++ {
		var seq []runPlan
		if cell.Kind == KindSolo {
			seq = []runPlan{{name: fmt.Sprintf("r%d-solo", r), kind: KindSolo, members: []Member{cell.A}, roles: []string{"A"}}}
		} else {
			pair := runPlan{name: fmt.Sprintf("r%d-pair", r), kind: KindPair, members: []Member{cell.A, *cell.B}, roles: []string{"A", "B"}}
			if c.ReuseSolo {
				seq = []runPlan{pair}
			} else {
				seq = append(seq, runPlan{name: fmt.Sprintf("r%d-soloA", r), kind: KindSolo, members: []Member{cell.A}, roles: []string{"A"}})
				if !cell.SameConfig() {
					seq = append(seq, runPlan{name: fmt.Sprintf("r%d-soloB", r), kind: KindSolo, members: []Member{*cell.B}, roles: []string{"B"}})
				}
				seq = append(seq, pair)
				if r%2 == 1 {
					slices.Reverse(seq)
				}
			}
		}
		for _, p := range seq {
			p.repeat = r
			out = append(out, p)
		}
	}
	for i := range out {
		out[i].seq = i
	}
	return out
}

func runCell(ctx context.Context, c *Campaign, cell Cell, b Backend, opt CellOptions) (Result, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := Result{
		Record: RecordCell, Version: ResultVersion, Campaign: c.Name, Cell: cell, Mode: c.Mode, Env: opt.Env,
		Backend: b.Name(), Attempt: max(opt.Attempt, 1), Started: time.Now().UTC(),
	}
	if opt.OutDir == "" {
		return res, fmt.Errorf("runner: cell %s: no output directory", cell.Label)
	}
	gpus := opt.GPUs
	if len(gpus) == 0 {
		gpus = c.GPUs[:1]
	}
	rc := &runCtx{
		c: c, cell: cell, backend: b, sampler: opt.Sampler, gpus: gpus, devIdx: opt.DeviceIndex, outDir: opt.OutDir,
		cellDir: filepath.Join(opt.OutDir, "cells", cell.Dir()), log: log,
	}
	if err := os.MkdirAll(rc.cellDir, 0o755); err != nil {
		return res, fmt.Errorf("runner: cell %s: %w", cell.Label, err)
	}
	res.Status = StatusOK
	gpuMem := c.GPUMemBytes
	if gpuMem == 0 {
		gpuMem = opt.GPUMemBytes
	}
	if cell.Kind == KindPair && c.ReuseSolo && opt.Solo != nil {
		for _, m := range []Member{cell.A, *cell.B} {
			if s, ok := opt.Solo(m); ok && (s.Status == StatusInfeasible || s.Status == StatusInfeasiblePredicted) {
				res.Status, res.Reason = StatusInfeasible, fmt.Sprintf("%s is infeasible alone: %s", m, s.Reason)
				res.Finished = time.Now().UTC()
				return res, nil
			}
		}
	}
	predicted := false
	for _, p := range plans(c, cell) {
		if p.kind == KindPair && !predicted && gpuMem > 0 {
			predicted = true
			ma, mb := soloMem(res.Runs, "A", opt.Solo, cell.A), soloMem(res.Runs, "B", opt.Solo, *cell.B)
			if cell.SameConfig() {
				mb = ma
			}
			if need := ma + mb + c.MemMarginBytes; ma > 0 && mb > 0 && need > gpuMem {
				if !opt.Force {
					res.Status = StatusInfeasiblePredicted
					res.Reason = fmt.Sprintf("predicted not to fit: %d + %d + margin %d bytes > GPU memory %d bytes", ma, mb, c.MemMarginBytes, gpuMem)
					break
				}
				res.Notes = append(res.Notes, "pair predicted not to fit; run anyway (--force)")
			}
		}
		log.Debug("run start", "cell", cell.Label, "run", p.name)
		rr, err := rc.execute(ctx, p)
		if err != nil {
			return res, err
		}
		log.Debug("run end", "cell", cell.Label, "run", p.name, "status", rr.Status, "reason", rr.Reason)
		res.Runs = append(res.Runs, rr)
		if rr.Status != StatusOK {
			res.Status, res.Reason, res.StderrTail = rr.Status, p.name+": "+rr.Reason, rr.StderrTail
			break
		}
	}
	summarize(c, &res, opt.Solo)
	res.Finished = time.Now().UTC()
	return res, nil
}

// soloMem returns the solo peak reserved memory of a member: from the cell's own solo runs
// (role), else from its solo cell.
func soloMem(runs []RunResult, role string, solo func(Member) (Result, bool), m Member) int64 {
	var mem int64
	for _, r := range runs {
		if r.Kind != KindSolo || r.Status != StatusOK {
			continue
		}
		for _, mr := range r.Members {
			if mr.Role == role {
				mem = max(mem, mr.MemReservedBytes)
			}
		}
	}
	if mem == 0 && solo != nil {
		if s, ok := solo(m); ok && s.A != nil {
			mem = s.A.MemReservedBytes
		}
	}
	return mem
}

// summarize fills the cell-level sides, ξ, notes and environment from the runs.
func summarize(c *Campaign, res *Result, solo func(Member) (Result, bool)) {
	cell := res.Cell
	res.A = side(c, res, "A", cell.A)
	if cell.B != nil {
		res.B = side(c, res, "B", *cell.B)
		if cell.SameConfig() && res.B.SoloMs == nil && res.A.SoloMs != nil {
			res.B.SoloMs, res.B.SoloDist, res.B.MemReservedBytes = res.A.SoloMs, res.A.SoloDist, res.A.MemReservedBytes
		}
	}
	for _, s := range []*Side{res.A, res.B} {
		if s == nil || s.PairMs == nil {
			continue
		}
		var soloMs *Estimate
		if s.SoloMs != nil {
			soloMs = s.SoloMs
		} else if solo != nil {
			if sr, ok := solo(s.Member); ok && sr.Status == StatusOK && sr.A != nil {
				soloMs = sr.A.SoloMs
			}
		}
		if soloMs != nil {
			role := "a"
			if s == res.B {
				role = "b"
			}
			s.Xi = XiEstimate(s.PairMs, soloMs, SeedFor(cell.ID, "xi-"+role))
		}
	}
	if res.A != nil && res.B != nil && res.A.Xi != nil && res.B.Xi != nil && res.A.Xi.Median > 0 && res.B.Xi.Median > 0 {
		res.PairThroughput = 1/res.A.Xi.Median + 1/res.B.Xi.Median
	}
	short := 0
	for _, r := range res.Runs {
		if r.ShortWindow {
			short++
		}
		if r.MPSObserved {
			res.Mode = "mps-observed"
		}
		for _, mr := range r.Members {
			if mr.start != nil {
				mergeStart(&res.Env, mr.start)
			}
		}
	}
	if res.Status != StatusOK {
		return
	}
	if c.Repeats < 5 {
		res.Notes = append(res.Notes, fmt.Sprintf("R=%d < 5 repeats: the CI is coarse", c.Repeats))
	}
	if short > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d run(s) with a short window", short))
	}
	for _, s := range []*Side{res.A, res.B} {
		if s == nil {
			continue
		}
		for name, e := range map[string]*Estimate{"solo step time": s.SoloMs, "ξ": s.Xi} {
			if e != nil && e.N > 1 && e.Median > 0 && (e.CI[1]-e.CI[0]) > 0.05*e.Median {
				res.Notes = append(res.Notes, fmt.Sprintf("%s of %s: 95%% CI wider than 5%% of the median", name, s.Member))
			}
		}
	}
	slices.Sort(res.Notes)
}

// side summarises the runs of one role.
func side(c *Campaign, res *Result, role string, m Member) *Side {
	s := &Side{Member: m}
	var soloVals, pairVals, soloDurs, pairDurs, harness, logged []float64
	for _, r := range res.Runs {
		if r.Status != StatusOK {
			continue
		}
		if r.ShortWindow {
			s.ShortWindows++
		}
		for _, mr := range r.Members {
			if mr.Role != role {
				continue
			}
			s.Impl = mr.Impl
			harness = append(harness, mr.StepMs.Median)
			logged = append(logged, mr.LoggedStepMs)
			if r.Kind == KindSolo {
				soloVals = append(soloVals, mr.StepMs.Median)
				soloDurs = append(soloDurs, mr.durs...)
				if mr.MemReservedBytes > s.MemReservedBytes {
					s.MemReservedBytes, s.MemSource = mr.MemReservedBytes, mr.MemSource
				}
				s.SamplesPerS = mr.SamplesPerS
			} else {
				pairVals = append(pairVals, mr.StepMs.Median)
				pairDurs = append(pairDurs, mr.durs...)
			}
		}
	}
	if len(soloVals) > 0 {
		e := Estimate95(soloVals, SeedFor(res.Cell.ID, "solo-"+role))
		d := Describe(soloDurs)
		s.SoloMs, s.SoloDist = &e, &d
	}
	if len(pairVals) > 0 {
		e := Estimate95(pairVals, SeedFor(res.Cell.ID, "pair-"+role))
		d := Describe(pairDurs)
		s.PairMs, s.PairDist = &e, &d
	}
	if len(harness) > 0 {
		s.HarnessStepMs, s.LoggedStepMs = Median(harness), Median(logged)
	}
	return s
}

// XiEstimate computes ξ from per-repeat pair and solo medians: ξ_r = pair_r / solo_r for
// each repeat both have (or pair_r / median solo when the repeat counts differ), then the
// median and a bootstrap CI seeded with seed.
func XiEstimate(pair, solo *Estimate, seed uint64) *Estimate {
	if pair == nil || solo == nil || len(pair.Values) == 0 || solo.Median <= 0 {
		return nil
	}
	xs := make([]float64, len(pair.Values))
	for r, p := range pair.Values {
		d := solo.Median
		if len(solo.Values) == len(pair.Values) && solo.Values[r] > 0 {
			d = solo.Values[r]
		}
		xs[r] = p / d
	}
	e := Estimate95(xs, seed)
	return &e
}

// mergeStart fills empty Env fields from a start event.
func mergeStart(e *Env, s *Event) {
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&e.Device, s.Device}, {&e.WorkloadGPU, s.GPU}, {&e.Torch, s.Torch}, {&e.Torchvision, s.Torchvision},
		{&e.Transformers, s.Transformers}, {&e.CUDA, s.CUDA}, {&e.CuDNN, s.CuDNN}, {&e.Python, s.Python},
	} {
		if *f.dst == "" {
			*f.dst = f.v
		}
	}
}

// SoloLookup returns a CellOptions.Solo function answering from the latest journal records
// of c: what a dispatcher passes to RunCell for pair cells with reuse_solo.
func SoloLookup(c *Campaign, latest map[string]Result) func(Member) (Result, bool) {
	solos := map[string]string{} // config → cell ID
	for _, cell := range c.Cells() {
		if cell.Kind == KindSolo {
			solos[cell.A.String()] = cell.ID
		}
	}
	return func(m Member) (Result, bool) {
		id, ok := solos[m.String()]
		if !ok {
			return Result{}, false
		}
		r, ok := latest[id]
		return r, ok
	}
}
