package runner

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

// ResultVersion is the version of the Result record format.
const ResultVersion = 1

// RecordCell is the value of Result.Record.
const RecordCell = "cell"

// Sharing modes a result records beyond profile's timeslice and mps: what was in effect when
// it differs from what the cell asked for. Such cells are kept out of profiles.
const (
	// ModeMPSObserved: a timeslice cell saw MPS processes during a run.
	ModeMPSObserved = "mps-observed"
	// ModeMPSUnconfirmed: an mps cell whose runs telemetry did not show under MPS.
	ModeMPSUnconfirmed = "mps-unconfirmed"
)

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
	// Repeats is the number of repeats run (between the campaign's repeats and max_repeats).
	Repeats int `json:"repeats,omitempty"`
	// Mode is the sharing mode in effect: "timeslice" or "mps" as the cell asked (solo cells:
	// "timeslice", alone on their GPUs), or ModeMPSObserved / ModeMPSUnconfirmed when what ran
	// differs (such cells are kept out of profiles).
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
// optimizer step; estimates are medians over repeats with 95% CIs (Estimate95).
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
	// MemReservedBytes is the solo peak of the caching allocator's reserved memory (max over
	// repeats and phases); MemDeviceBytes the driver's account of the job's processes, CUDA
	// context included (0: unknown). The profile's memory is MemDeviceBytes when known.
	MemReservedBytes int64   `json:"mem_reserved_bytes,omitempty"`
	MemDeviceBytes   int64   `json:"mem_device_bytes,omitempty"`
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
	// CPUAffinity is the runner's CPU affinity ("0-15"); the workloads inherit it.
	CPUAffinity string `json:"cpu_affinity,omitempty"`
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
	// Timing is how the workloads timed micro-steps ("cuda-events" or "wall"); Precision the
	// FP32 math in effect as they read it back.
	Timing    string         `json:"timing,omitempty"`
	Precision map[string]any `json:"precision,omitempty"`
	// MPS is what DetectMPS found on the host before the campaign.
	MPS *gpu.MPSStatus `json:"mps,omitempty"`
}

// CellOptions configures RunCell.
type CellOptions struct {
	// OutDir receives the raw files under cells/<cell dir>/ (required).
	OutDir string
	// GPUs pins the cell (default: the campaign's first GPUs).
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
	// Deadline, when set, is when no further repeat may start (the campaign's budget).
	Deadline time.Time
	// Notes are attached to the result (e.g. foreign processes found before the cell).
	Notes []string
	// MPS is the MPS daemon mps cells run under (nil: MPS unavailable, with MPSReason).
	MPS       *MPSDaemon
	MPSReason string
	// Token marks the cell's processes in their environment (EnvToken), so that processes
	// that leave their process group are still found and stopped; "" derives one from OutDir.
	Token string

	// pool runs the cell's windows on warm workers (Run, for workers: warm); without it the
	// cell starts fresh processes, as a cluster task does.
	pool *warmPool
}

// cellMode is the sharing mode a cell asks for: its own for pairs, timeslice for solo cells
// (alone on their GPUs, isolated from any MPS daemon).
func cellMode(cell Cell) string {
	if cell.Kind == KindPair && cell.Mode != "" {
		return cell.Mode
	}
	return string(profile.Timeslice)
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

// repeatPlans returns the runs of repeat r of a cell in ABBA order: solo-A, solo-B, pair in
// even repeats, the reverse in odd ones. Solo-B is skipped when B has A's configuration, and
// pair cells with reuse_solo run only their pairs.
func repeatPlans(c *Campaign, cell Cell, r int) []runPlan {
	if cell.Kind == KindSolo {
		return []runPlan{{name: fmt.Sprintf("r%d-solo", r), kind: KindSolo, repeat: r, members: []Member{cell.A}, roles: []string{"A"}}}
	}
	pair := runPlan{name: fmt.Sprintf("r%d-pair", r), kind: KindPair, repeat: r, members: []Member{cell.A, *cell.B}, roles: []string{"A", "B"}}
	if c.ReuseSolo {
		return []runPlan{pair}
	}
	seq := []runPlan{{name: fmt.Sprintf("r%d-soloA", r), kind: KindSolo, repeat: r, members: []Member{cell.A}, roles: []string{"A"}}}
	if !cell.SameConfig() {
		seq = append(seq, runPlan{name: fmt.Sprintf("r%d-soloB", r), kind: KindSolo, repeat: r, members: []Member{*cell.B}, roles: []string{"B"}})
	}
	seq = append(seq, pair)
	if r%2 == 1 {
		slices.Reverse(seq)
	}
	return seq
}

// plans returns the runs of the first n repeats in execution order.
func plans(c *Campaign, cell Cell, n int) []runPlan {
	var out []runPlan
	for r := 0; r < n; r++ {
		out = append(out, repeatPlans(c, cell, r)...)
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
	mode := cellMode(cell)
	res := Result{
		Record: RecordCell, Version: ResultVersion, Campaign: c.Name, Cell: cell, Mode: mode, Env: opt.Env,
		Backend: b.Name(), Attempt: max(opt.Attempt, 1), Started: time.Now().UTC(), Notes: slices.Clone(opt.Notes),
	}
	if opt.OutDir == "" {
		return res, fmt.Errorf("runner: cell %s: no output directory", cell.Label)
	}
	gpus := opt.GPUs
	if len(gpus) == 0 && len(c.GPUs) >= cell.GPUs() {
		gpus = c.GPUs[:cell.GPUs()]
	}
	token := opt.Token
	if token == "" {
		token = CampaignToken(opt.OutDir)
	}
	rc := &runCtx{
		c: c, cell: cell, backend: b, sampler: opt.Sampler, gpus: gpus, devIdx: opt.DeviceIndex, outDir: opt.OutDir,
		cellDir: filepath.Join(opt.OutDir, "cells", cell.Dir()), log: log, token: token, pool: opt.pool,
	}
	if c.Workers == WorkersWarm && opt.pool == nil {
		res.Notes = append(res.Notes, "workers: warm, but this cell ran alone (a cluster task or profile cell): fresh processes")
	}
	done := func(status Status, reason string) (Result, error) {
		res.Status, res.Reason, res.Finished = status, reason, time.Now().UTC()
		return res, nil
	}
	if c.Workload.Device != "cpu" && len(gpus) < cell.GPUs() {
		return done(StatusUnavailable, fmt.Sprintf("the cell needs %d GPUs; %d given", cell.GPUs(), len(gpus)))
	}
	if mode == string(profile.MPS) {
		if opt.MPS == nil {
			return done(StatusUnavailable, "MPS unavailable: "+firstNonEmpty(opt.MPSReason, "no MPS control daemon"))
		}
		rc.mpsDir = opt.MPS.PipeDir
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
				return done(StatusInfeasible, fmt.Sprintf("%s is infeasible alone: %s", m, s.Reason))
			}
		}
	}
	predicted, seq := false, 0
repeats:
	for r := 0; r < c.MaxRepeats; r++ {
		if r >= c.Repeats && converged(c, res, opt.Solo) {
			break
		}
		if r > 0 && !opt.Deadline.IsZero() && time.Now().After(opt.Deadline) {
			res.Notes = append(res.Notes, fmt.Sprintf("budget reached after %d repeat(s)", r))
			break
		}
		for _, p := range repeatPlans(c, cell, r) {
			p.seq = seq
			seq++
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
						break repeats
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
				break repeats
			}
		}
		res.Repeats = r + 1
	}
	summarize(c, &res, opt.Solo)
	res.Finished = time.Now().UTC()
	return res, nil
}

// converged reports whether the repeats so far estimate what the cell measures to the
// campaign's ci_target: ξ of both sides for pairs (the pair step times when ξ cannot be
// computed yet), the solo step time for solo cells.
func converged(c *Campaign, res Result, solo func(Member) (Result, bool)) bool {
	sides(c, &res, solo)
	var ests []*Estimate
	switch {
	case res.A == nil:
		return false
	case res.Cell.Kind == KindSolo:
		ests = []*Estimate{res.A.SoloMs}
	case res.B != nil:
		for _, s := range []*Side{res.A, res.B} {
			ests = append(ests, cmpOrEstimate(s.Xi, s.PairMs))
		}
	}
	for _, e := range ests {
		if e == nil || !(e.HalfWidth() <= c.CITarget) {
			return false
		}
	}
	return len(ests) > 0
}

func cmpOrEstimate(a, b *Estimate) *Estimate {
	if a != nil {
		return a
	}
	return b
}

// soloMem returns the solo memory of a member, the driver's account where known, else the
// allocator's reserved peak: from the cell's own solo runs (role), else from its solo cell.
func soloMem(runs []RunResult, role string, solo func(Member) (Result, bool), m Member) int64 {
	var mem int64
	for _, r := range runs {
		if r.Kind != KindSolo || r.Status != StatusOK {
			continue
		}
		for _, mr := range r.Members {
			if mr.Role == role {
				mem = max(mem, mr.MemDeviceBytes, mr.MemReservedBytes)
			}
		}
	}
	if mem == 0 && solo != nil {
		if s, ok := solo(m); ok && s.A != nil {
			mem = max(s.A.MemDeviceBytes, s.A.MemReservedBytes)
		}
	}
	return mem
}

// sides fills the cell-level sides and ξ from the runs.
func sides(c *Campaign, res *Result, solo func(Member) (Result, bool)) {
	cell := res.Cell
	res.A = side(c, res, "A", cell.A)
	res.B = nil
	if cell.B != nil {
		res.B = side(c, res, "B", *cell.B)
		if cell.SameConfig() && res.B.SoloMs == nil && res.A.SoloMs != nil {
			res.B.SoloMs, res.B.SoloDist = res.A.SoloMs, res.A.SoloDist
			res.B.MemReservedBytes, res.B.MemDeviceBytes = res.A.MemReservedBytes, res.A.MemDeviceBytes
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
	res.PairThroughput = 0
	if res.A != nil && res.B != nil && res.A.Xi != nil && res.B.Xi != nil && res.A.Xi.Median > 0 && res.B.Xi.Median > 0 {
		res.PairThroughput = 1/res.A.Xi.Median + 1/res.B.Xi.Median
	}
}

// summarize fills the sides, ξ, mode, notes and environment from the runs.
func summarize(c *Campaign, res *Result, solo func(Member) (Result, bool)) {
	sides(c, res, solo)
	short, pairRuns, mpsRuns := 0, 0, 0
	for _, r := range res.Runs {
		if r.ShortWindow {
			short++
		}
		if r.Kind == KindPair && r.Status == StatusOK {
			pairRuns++
			if r.MPSObserved {
				mpsRuns++
			}
		}
		for _, mr := range r.Members {
			if mr.start != nil {
				mergeStart(&res.Env, mr.start)
			}
		}
	}
	switch {
	case res.Mode == string(profile.Timeslice) && mpsRuns > 0:
		res.Mode = ModeMPSObserved
	case res.Mode == string(profile.MPS) && pairRuns > 0 && mpsRuns < pairRuns:
		res.Mode = ModeMPSUnconfirmed
		res.Notes = append(res.Notes, fmt.Sprintf("MPS seen by telemetry in %d of %d pair runs (telemetry %s): the mode is not confirmed", mpsRuns, pairRuns, firstNonEmpty(res.Env.Telemetry, "none")))
	}
	if res.Status != StatusOK {
		slices.Sort(res.Notes)
		return
	}
	switch n := res.Repeats; {
	case n == 1:
		res.Notes = append(res.Notes, "R=1 repeat: no confidence interval")
	case n < BootstrapMinRepeats:
		res.Notes = append(res.Notes, fmt.Sprintf("R=%d repeats: 95%% CIs are Student-t intervals of the mean (a bootstrap from %d repeats)", n, BootstrapMinRepeats))
	}
	if short > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d run(s) with a short window", short))
	}
	for _, s := range []*Side{res.A, res.B} {
		if s == nil {
			continue
		}
		for _, x := range []struct {
			name string
			e    *Estimate
		}{{"solo step time", s.SoloMs}, {"ξ", s.Xi}} {
			if e := x.e; e != nil && e.N > 1 && e.Median > 0 && e.HalfWidth() > c.CITarget {
				res.Notes = append(res.Notes, fmt.Sprintf("%s of %s: 95%% CI half-width %.1f%% > target %.1f%% after %d repeats", x.name, s.Member, 100*e.HalfWidth(), 100*c.CITarget, e.N))
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
				s.MemDeviceBytes = max(s.MemDeviceBytes, mr.MemDeviceBytes)
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
// median and a 95% CI seeded with seed.
func XiEstimate(pair, solo *Estimate, seed uint64) *Estimate {
	if pair == nil || solo == nil || len(pair.Values) == 0 || !(solo.Median > 0) {
		return nil
	}
	xs := make([]float64, len(pair.Values))
	for r, p := range pair.Values {
		d := solo.Median
		if len(solo.Values) == len(pair.Values) && solo.Values[r] > 0 {
			d = solo.Values[r]
		}
		xs[r] = p / d
		if math.IsNaN(xs[r]) || math.IsInf(xs[r], 0) {
			return nil
		}
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
		{&e.Timing, s.Timing},
	} {
		if *f.dst == "" {
			*f.dst = f.v
		}
	}
	if e.Precision == nil && s.Precision != nil {
		e.Precision = s.Precision
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
