package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sharebench/sharebench/internal/fsutil"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

// RunOptions configures Run.
type RunOptions struct {
	// OutDir is the campaign directory (created if needed); rerunning into the same
	// directory resumes.
	OutDir string
	// Backend starts the workloads.
	Backend Backend
	// Sampler records telemetry (nil: none). Run serialises its use.
	Sampler gpu.Sampler
	// Logger receives log lines (nil: discarded).
	Logger *slog.Logger
	// Progress, when set, receives a one-line progress display rewritten in place (use it
	// only when stderr is a terminal); otherwise progress goes to Logger.
	Progress io.Writer
	// RetryFailed reruns cells whose latest record is failed (done cells are always skipped).
	RetryFailed bool
	// Force runs pairs predicted not to fit in GPU memory.
	Force bool
	// Command is the command line recorded in the manifest and in profile.json.
	Command string
	// ProcRoot is where to look for MPS daemons (default /proc).
	ProcRoot string
	// Getenv reads the runner's environment (default os.Getenv): CUDA_VISIBLE_DEVICES and
	// CUDA_MPS_PIPE_DIRECTORY.
	Getenv func(string) string
}

// Summary tells what Run did.
type Summary struct {
	Cells   Counts
	Ran     int // cells run in this invocation
	Skipped int // cells already in the journal
	// OverBudget counts cells left pending because the campaign's budget could not hold them.
	OverBudget int
	// Stale counts processes of an earlier invocation found running and stopped.
	Stale  int
	OutDir string
}

// Run executes a campaign (docs/runner.md): solo cells first, then pair cells (by sub-batch
// level with order: levels), one cell per set of GPUs at a time. Each finished cell is
// appended to the journal at once; cells already there are skipped, so an interrupted
// campaign resumes where it stopped, after stopping workloads an earlier invocation left
// running. The resolved campaign is written to PlanFile before the first cell, so that the
// directory tells its cells even after a kill -9. Per-cell failures never stop the campaign.
// When ctx is cancelled the running children are terminated (SIGTERM to their process groups,
// SIGKILL after the grace period) and Run returns the context's error after writing cells.csv,
// profile.json and manifest.json (atomically) from the journal.
func Run(ctx context.Context, c *Campaign, opt RunOptions) (Summary, error) {
	sum := Summary{OutDir: opt.OutDir}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if opt.OutDir == "" || opt.Backend == nil {
		return sum, errors.New("runner: Run needs an output directory and a backend")
	}
	gpus, err := ResolveGPUs(c.GPUs, getenv("CUDA_VISIBLE_DEVICES"))
	if err != nil && c.Workload.Device != "cpu" {
		return sum, fmt.Errorf("runner: campaign %s: %w", c.Name, err)
	}
	if err := os.MkdirAll(filepath.Join(opt.OutDir, "cells"), 0o755); err != nil {
		return sum, fmt.Errorf("runner: campaign %s: %w", c.Name, err)
	}
	if err := opt.Backend.Probe(ctx); err != nil {
		return sum, fmt.Errorf("runner: campaign %s: backend %s: %w", c.Name, opt.Backend.Name(), err)
	}
	journal, err := OpenJournal(filepath.Join(opt.OutDir, JournalFile))
	if err != nil {
		return sum, err
	}
	defer journal.Close()
	if err := writePlan(opt.OutDir, c); err != nil {
		return sum, err
	}
	records, problems, err := ReadJournal(journal.Path())
	if err != nil {
		return sum, err
	}
	for _, p := range problems {
		log.Warn("journal record ignored; its cell runs again", "journal", journal.Path(), "problem", p)
	}
	latest := Latest(records)
	attempts := map[string]int{}
	for _, r := range records {
		attempts[r.Cell.ID]++
	}
	token := CampaignToken(opt.OutDir)
	if stale := killTokenProcs(token + "/"); len(stale) > 0 {
		sum.Stale = len(stale)
		log.Warn("stopped workload processes of an earlier invocation of this campaign", "pids", stale)
	}

	started := time.Now().UTC()
	sampler := opt.Sampler
	if sampler == nil {
		sampler = gpu.None{}
	}
	sampler = &lockedSampler{s: sampler}
	devs, env := probeHost(ctx, sampler, opt.ProcRoot, log)
	host := hostInfo()
	var gpuMem int64
	if len(devs) > 0 {
		d := devs[0]
		if len(gpus) > 0 {
			if i := deviceFor(devs, gpus[0]); i >= 0 {
				d = devs[i]
			}
		}
		env.GPU, env.GPUUUID, env.GPUMemBytes, env.Driver, env.CUDADriver = d.Name, d.UUID, d.MemTotalBytes, d.Driver, d.CUDA
		gpuMem = d.MemTotalBytes
	}

	var mu sync.Mutex // guards latest, attempts, sum, durations
	cells := c.Cells()
	var todo []Cell
	for _, cell := range cells {
		if r, ok := latest[cell.ID]; ok && (r.Status.Done() || r.Status == StatusFailed && !opt.RetryFailed) {
			sum.Skipped++
			continue
		}
		todo = append(todo, cell)
	}
	nSolo, nPair := c.CellCount()
	minRuns, maxRuns := runsBounds(c, todo)
	log.Info("campaign", "name", c.Name, "cells", len(cells), "solo", nSolo, "pair", nPair, "to_run", len(todo),
		"runs_min", minRuns, "runs_max", maxRuns, "backend", opt.Backend.Name(), "telemetry", sampler.Name(), "out", opt.OutDir)
	if sum.Skipped > 0 {
		log.Info("resuming: cells already in the journal are skipped", "skipped", sum.Skipped)
	}
	prog := newProgress(opt.Progress, log, len(cells))
	for range sum.Skipped {
		prog.skip()
	}

	var mps *MPSDaemon
	mpsReason := ""
	if slices.ContainsFunc(todo, func(x Cell) bool { return x.Mode == string(profile.MPS) }) {
		mps, mpsReason = StartMPS(ctx, *env.MPS, getenv("CUDA_MPS_PIPE_DIRECTORY"), token, log)
		if mps != nil {
			env.MPS.Evidence = append(env.MPS.Evidence, mps.Evidence)
			defer mps.Stop(log)
		} else {
			log.Warn("MPS unavailable: mps cells are recorded as unavailable; time-slicing cells run", "reason", mpsReason)
		}
	}
	writeOut := func() error {
		mu.Lock()
		snapshot := make(map[string]Result, len(latest))
		for k, v := range latest {
			snapshot[k] = v
		}
		mu.Unlock()
		return writeOutputs(c, snapshot, opt, host, devs, *env.MPS, sampler.Name(), started)
	}

	lookup := SoloLookup(c, latest)
	soloOf := func(m Member) (Result, bool) {
		mu.Lock()
		defer mu.Unlock()
		return lookup(m)
	}
	pool := newGPUPool(gpus, c.Workload.Device == "cpu")
	durations := map[string][]time.Duration{} // by kind and GPU count: what the budget expects
	var deadline time.Time
	if c.Budget > 0 {
		deadline = started.Add(c.Budget.D())
	}
	var warm *warmPool
	if c.Workers == WorkersWarm {
		var warmGPUs []string
		if c.Workload.Device != "cpu" && len(gpus) > 0 {
			warmGPUs = gpus[:1]
		}
		mpsDir := ""
		if mps != nil {
			mpsDir = mps.PipeDir
		}
		warm, err = newWarmPool(c, opt.Backend, warmGPUs, opt.OutDir, token, mpsDir, log, func(r WorkersRecord) {
			if err := journal.AppendRecord(r); err != nil {
				log.Warn("the record of warm workers could not be journaled", "group", r.Group, "err", err)
			}
		})
		if err != nil {
			return sum, err
		}
		defer warm.close()
	}
	var (
		runErr      error
		group       string
		groupNotes  []string
		prepareCost time.Duration // what the last group of warm workers took to become ready
	)
	allPhases := phases(c, todo)
	for pi, phase := range allPhases {
		if warm != nil && workerGroup(c, phase[0]) != group {
			group = workerGroup(c, phase[0])
			if !deadline.IsZero() && time.Now().Add(prepareCost).After(deadline) {
				n := 0
				for _, rest := range allPhases[pi:] {
					n += len(rest)
				}
				sum.OverBudget += n
				log.Info("cells left pending: the budget cannot hold their warm workers and cells", "group", group, "cells", n, "budget", c.Budget)
				break
			}
			var cells, keep []Cell
			for _, rest := range allPhases[pi:] {
				for _, cell := range rest {
					keep = append(keep, cell)
					// Without an MPS daemon the mps cells are unavailable: they need no workers.
					if workerGroup(c, cell) == group && (mps != nil || cellMode(cell) != string(profile.MPS)) {
						cells = append(cells, cell)
					}
				}
			}
			var idx []int
			if len(warm.gpus) > 0 {
				if i := deviceFor(devs, warm.gpus[0]); i >= 0 {
					idx = []int{devs[i].Index}
				}
			}
			// The runner's own workers hold the GPU from now on: the check for foreign compute
			// processes runs once per group, before its workers start, and skips them.
			groupNotes = waitForeign(ctx, sampler, idx, c.ForeignWait.D(), log, phase[0], warm.ownPIDs())
			t0 := time.Now()
			pctx, cancel := ctx, context.CancelFunc(func() {})
			if !deadline.IsZero() {
				// Workers that do not become ready within the budget (a hung MPS client) must
				// not hold the campaign past it; their cells are then left pending.
				pctx, cancel = context.WithDeadline(ctx, deadline)
			}
			warm.prepare(pctx, group, cells, keep)
			cancel()
			prepareCost = time.Since(t0)
			if err := ctx.Err(); err != nil {
				runErr = err
				break
			}
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(pool.limit())
		for _, cell := range phase {
			if gctx.Err() != nil {
				break
			}
			g.Go(func() error {
				devIDs, ok := pool.acquire(gctx, cell.GPUs())
				if !ok {
					return gctx.Err()
				}
				defer pool.release(devIDs)
				key := cell.Kind + "/" + strconv.Itoa(cell.GPUs())
				mu.Lock()
				attempt := attempts[cell.ID] + 1
				est := meanDuration(durations[key])
				mu.Unlock()
				if !deadline.IsZero() && time.Now().Add(est).After(deadline) {
					mu.Lock()
					sum.OverBudget++
					mu.Unlock()
					log.Info("cell left pending: the budget cannot hold it", "cell", cell.Label, "expected", est.Round(time.Second), "budget", c.Budget)
					return nil
				}
				var idx []int
				for _, dev := range devIDs {
					if i := deviceFor(devs, dev); i >= 0 {
						idx = append(idx, devs[i].Index)
					}
				}
				notes := groupNotes
				if warm == nil {
					notes = waitForeign(gctx, sampler, idx, c.ForeignWait.D(), log, cell, nil)
				}
				prog.start(cell)
				t0 := time.Now()
				res, err := runCell(gctx, c, cell, opt.Backend, CellOptions{
					OutDir: opt.OutDir, GPUs: devIDs, Sampler: sampler, DeviceIndex: idx, Logger: log, Solo: soloOf,
					GPUMemBytes: gpuMem, Force: opt.Force, Attempt: attempt, Env: env, Deadline: deadline, Notes: notes,
					MPS: mps, MPSReason: mpsReason, Token: token, pool: warm,
				})
				if err != nil {
					return err // cancellation or infrastructure: the cell is not journaled
				}
				if err := journal.Append(res); err != nil {
					return err
				}
				mu.Lock()
				latest[cell.ID] = res
				attempts[cell.ID] = attempt
				sum.Ran++
				if res.Status == StatusOK {
					durations[key] = append(durations[key], time.Since(t0))
				}
				mu.Unlock()
				prog.done(res)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			runErr = err
			break
		}
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
	}
	prog.finish()
	if err := writeOut(); err != nil {
		return sum, errors.Join(runErr, err)
	}
	mu.Lock()
	sum.Cells = CountCells(cells, latest)
	mu.Unlock()
	if runErr != nil {
		return sum, runErr
	}
	if sum.OverBudget > 0 {
		log.Warn("budget reached: cells left pending run on the next invocation", "pending", sum.OverBudget, "budget", c.Budget)
	}
	log.Info("campaign done", "ok", sum.Cells.OK, "infeasible", sum.Cells.Infeasible+sum.Cells.InfeasiblePredicted,
		"failed", sum.Cells.Failed, "unavailable", sum.Cells.Unavailable, "profile", filepath.Join(opt.OutDir, ProfileFile))
	return sum, nil
}

// phases groups the cells to run into phases that run one after the other: solo cells, then
// pair cells (which read the solo results), per sharing-mode rank and sub-batch level with
// order: levels.
func phases(c *Campaign, todo []Cell) [][]Cell {
	var out [][]Cell
	last := ""
	for _, cell := range todo {
		key := cell.Kind
		if c.Order == OrderLevels {
			key = strconv.Itoa(modeRank(cell)) + "/" + strconv.Itoa(cell.Level) + "/" + key
		}
		if len(out) == 0 || key != last {
			out = append(out, nil)
			last = key
		}
		out[len(out)-1] = append(out[len(out)-1], cell)
	}
	return out
}

// runsBounds returns the fewest and the most runs the cells can take (repeats to
// max_repeats, each repeat one run for solo cells and up to three for pairs).
func runsBounds(c *Campaign, cells []Cell) (lo, hi int) {
	for _, cell := range cells {
		n := len(repeatPlans(c, cell, 0))
		lo += n * c.Repeats
		hi += n * c.MaxRepeats
	}
	return lo, hi
}

func meanDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// gpuPool hands out GPUs to cells: n at a time for a cell of n GPUs. CPU campaigns run one
// cell at a time (two would measure each other).
type gpuPool struct {
	mu   sync.Mutex
	cond *sync.Cond
	free []string
	all  int
	cpu  bool
}

func newGPUPool(ids []string, cpu bool) *gpuPool {
	p := &gpuPool{free: slices.Clone(ids), all: len(ids), cpu: cpu}
	if cpu {
		p.free, p.all = []string{""}, 1
	}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *gpuPool) limit() int { return max(p.all, 1) }

// acquire waits for n free GPUs (one slot on CPU). A cell needing more GPUs than the campaign
// has gets none (its record says so) instead of waiting forever.
func (p *gpuPool) acquire(ctx context.Context, n int) ([]string, bool) {
	if p.cpu {
		n = 1
	}
	if n > p.all {
		return nil, ctx.Err() == nil
	}
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) < n {
		if ctx.Err() != nil {
			return nil, false
		}
		p.cond.Wait()
	}
	got := slices.Clone(p.free[:n])
	p.free = p.free[n:]
	if p.cpu {
		return nil, true
	}
	return got, true
}

func (p *gpuPool) release(ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpu {
		p.free = []string{""}
	} else {
		p.free = append(p.free, ids...)
	}
	p.cond.Broadcast()
}

// ResolveGPUs maps a campaign's GPU ids to the devices the workloads get as
// CUDA_VISIBLE_DEVICES. Without an inherited CUDA_VISIBLE_DEVICES they are used as they are;
// with one (a Slurm allocation, a container, a user's restriction) the ids are positions in
// it, as CUDA numbers devices ("0" is its first entry), so a campaign never reaches a GPU it
// was not given. A UUID must be one of the inherited entries.
func ResolveGPUs(ids []string, inherited string) ([]string, error) {
	inherited = strings.TrimSpace(inherited)
	if inherited == "" {
		return slices.Clone(ids), nil
	}
	visible := strings.Split(inherited, ",")
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err == nil {
			if n < 0 || n >= len(visible) {
				return nil, fmt.Errorf("gpus: %s: CUDA_VISIBLE_DEVICES=%s makes %d device(s) visible (use 0..%d)", id, inherited, len(visible), len(visible)-1)
			}
			out = append(out, strings.TrimSpace(visible[n]))
			continue
		}
		if !slices.Contains(visible, id) {
			return nil, fmt.Errorf("gpus: %s is not among CUDA_VISIBLE_DEVICES=%s", id, inherited)
		}
		out = append(out, id)
	}
	return out, nil
}

// waitForeign checks that no compute process holds the cell's GPUs before it starts (the
// runner's own are gone between cells): it waits up to limit for foreign ones to leave, and
// returns a note for the result when they do not (the cell runs anyway).
func waitForeign(ctx context.Context, s gpu.Sampler, idx []int, limit time.Duration, log *slog.Logger, cell Cell, own map[int]bool) []string {
	if s.Name() == gpu.SourceNone || len(idx) == 0 {
		return nil
	}
	deadline := time.Now().Add(limit)
	warned := false
	for {
		samples, err := s.Sample(ctx)
		if err != nil {
			return []string{fmt.Sprintf("foreign-process check failed: %v", err)}
		}
		var foreign []string
		for _, x := range samples {
			if !slices.Contains(idx, x.Index) {
				continue
			}
			for _, p := range x.Procs {
				if strings.Contains(p.Name, "nvidia-cuda-mps-server") || own[p.PID] {
					continue // the MPS server is infrastructure and warm workers are the runner's own
				}
				foreign = append(foreign, fmt.Sprintf("GPU %d: pid %d %s (%d MiB)", x.Index, p.PID, p.Name, p.UsedBytes>>20))
			}
		}
		if len(foreign) == 0 {
			return nil
		}
		if !warned {
			log.Warn("foreign compute processes on the cell's GPUs; waiting", "cell", cell.Label, "procs", foreign, "limit", limit)
			warned = true
		}
		if time.Now().After(deadline) {
			return []string{fmt.Sprintf("foreign compute processes held the GPU when the cell started (waited %s): %s", limit, strings.Join(foreign, "; "))}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(2*time.Second, limit)):
		}
	}
}

// writeOutputs writes cells.csv, profile.json and manifest.json atomically.
func writeOutputs(c *Campaign, latest map[string]Result, opt RunOptions, host HostInfo, devs []gpu.DeviceInfo, mps gpu.MPSStatus, telemetry string, started time.Time) error {
	if err := fsutil.WriteFileAtomic(filepath.Join(opt.OutDir, CellsFile), CellsCSV(c, latest)); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	t, err := BuildProfile(c, latest, opt.Command)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Write(&buf); err != nil {
		return fmt.Errorf("runner: campaign %s: %w", c.Name, err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(opt.OutDir, ProfileFile), buf.Bytes()); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	m := buildManifest(c, latest, host, devs, mps, telemetry, opt.Backend.Name(), opt.Command, started, time.Now().UTC())
	b, err := marshalIndent(m)
	if err != nil {
		return fmt.Errorf("runner: campaign %s: manifest: %w", c.Name, err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(opt.OutDir, ManifestFile), b); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}

// deviceFor finds the device a campaign GPU id (index or UUID) names; -1 if none.
func deviceFor(devs []gpu.DeviceInfo, id string) int {
	for i, d := range devs {
		if d.UUID == id || strconv.Itoa(d.Index) == id {
			return i
		}
	}
	return -1
}

// lockedSampler serialises a Sampler shared by cells running on several GPUs.
type lockedSampler struct {
	mu sync.Mutex
	s  gpu.Sampler
}

func (l *lockedSampler) Name() string { return l.s.Name() }

func (l *lockedSampler) Devices(ctx context.Context) ([]gpu.DeviceInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Devices(ctx)
}

func (l *lockedSampler) Sample(ctx context.Context) ([]gpu.Sample, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Sample(ctx)
}

func (l *lockedSampler) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Close()
}

// probeHost lists the devices the sampler sees and detects an MPS daemon, warning about both in
// the log, and returns the environment record to fill in.
func probeHost(ctx context.Context, sampler gpu.Sampler, procRoot string, log *slog.Logger) ([]gpu.DeviceInfo, Env) {
	devs, err := sampler.Devices(ctx)
	if err != nil {
		log.Warn("telemetry: cannot list devices", "source", sampler.Name(), "err", err)
	}
	if procRoot == "" {
		procRoot = "/proc"
	}
	pipeDir := os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	if pipeDir == "" {
		pipeDir = gpu.DefaultMPSPipeDir
	}
	mps := gpu.DetectMPS(procRoot, pipeDir)
	if mps.Detected {
		log.Warn("MPS daemon detected on this host; time-slicing runs get a private, empty CUDA_MPS_PIPE_DIRECTORY", "evidence", mps.Evidence)
	}
	return devs, Env{Hostname: hostInfo().Hostname, Telemetry: sampler.Name(), MPS: &mps, CPUAffinity: cpuAffinity()}
}
