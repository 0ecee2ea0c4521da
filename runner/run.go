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
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sharebench/sharebench/internal/fsutil"
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
}

// Summary tells what Run did.
type Summary struct {
	Cells   Counts
	Ran     int // cells run in this invocation
	Skipped int // cells already in the journal
	OutDir  string
}

// Run executes a campaign (RUNNER.md §3): solo cells first, then pair cells, one cell per
// GPU at a time. Each finished cell is appended to the journal at once; cells already there
// are skipped, so an interrupted campaign resumes where it stopped. Per-cell failures never
// stop the campaign. When ctx is cancelled the running children are terminated (SIGTERM to
// their process groups, SIGKILL after the grace period) and Run returns the context's error
// after writing cells.csv, profile.json and manifest.json (atomically) from the journal.
func Run(ctx context.Context, c *Campaign, opt RunOptions) (Summary, error) {
	sum := Summary{OutDir: opt.OutDir}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.OutDir == "" || opt.Backend == nil {
		return sum, errors.New("runner: Run needs an output directory and a backend")
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
	records, skipped, err := ReadJournal(journal.Path())
	if err != nil {
		return sum, err
	}
	if skipped > 0 {
		log.Warn("journal lines skipped (cut short or foreign)", "journal", journal.Path(), "lines", skipped)
	}
	latest := Latest(records)
	attempts := map[string]int{}
	for _, r := range records {
		attempts[r.Cell.ID]++
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
		if i := deviceFor(devs, c.GPUs[0]); i >= 0 {
			d = devs[i]
		}
		env.GPU, env.GPUUUID, env.GPUMemBytes, env.Driver, env.CUDADriver = d.Name, d.UUID, d.MemTotalBytes, d.Driver, d.CUDA
		gpuMem = d.MemTotalBytes
	}
	log.Info("campaign", "name", c.Name, "backend", opt.Backend.Name(), "telemetry", sampler.Name(), "out", opt.OutDir)

	var mu sync.Mutex // guards latest, attempts, sum, progress
	writeOutputs := func() error {
		mu.Lock()
		snapshot := make(map[string]Result, len(latest))
		for k, v := range latest {
			snapshot[k] = v
		}
		mu.Unlock()
		return writeOutputs(c, snapshot, opt, host, devs, *env.MPS, sampler.Name(), started)
	}

	cells := c.Cells()
	prog := newProgress(opt.Progress, log, len(cells))
	var todo [2][]Cell // solo phase, pair phase
	for _, cell := range cells {
		if r, ok := latest[cell.ID]; ok && (r.Status.Done() || !opt.RetryFailed) {
			sum.Skipped++
			prog.skip()
			continue
		}
		phase := 0
		if cell.Kind == KindPair {
			phase = 1
		}
		todo[phase] = append(todo[phase], cell)
	}
	if sum.Skipped > 0 {
		log.Info("resuming: cells already in the journal are skipped", "skipped", sum.Skipped)
	}
	lookup := SoloLookup(c, latest)
	soloOf := func(m Member) (Result, bool) {
		mu.Lock()
		defer mu.Unlock()
		return lookup(m)
	}
	gpus := c.GPUs
	limit := len(gpus)
	if c.Workload.Device == "cpu" {
		gpus, limit = []string{""}, 1 // CPU runs in parallel would measure each other
	}
	free := make(chan string, len(gpus))
	for _, g := range gpus {
		free <- g
	}
	var runErr error
	for _, phase := range todo {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(limit)
		for _, cell := range phase {
			if gctx.Err() != nil {
				break
			}
			g.Go(func() error {
				dev := <-free
				defer func() { free <- dev }()
				var pin []string
				var idx []int
				if dev != "" {
					pin = []string{dev}
					if i := deviceFor(devs, dev); i >= 0 {
						idx = []int{devs[i].Index}
					}
				}
				mu.Lock()
				attempt := attempts[cell.ID] + 1
				mu.Unlock()
				prog.start(cell)
				res, err := runCell(gctx, c, cell, opt.Backend, CellOptions{
					OutDir: opt.OutDir, GPUs: pin, Sampler: sampler, DeviceIndex: idx, Logger: log, Solo: soloOf,
					GPUMemBytes: gpuMem, Force: opt.Force, Attempt: attempt, Env: env,
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
	if err := writeOutputs(); err != nil {
		return sum, errors.Join(runErr, err)
	}
	mu.Lock()
	sum.Cells = CountCells(cells, latest)
	mu.Unlock()
	if runErr != nil {
		return sum, runErr
	}
	log.Info("campaign done", "ok", sum.Cells.OK, "infeasible", sum.Cells.Infeasible+sum.Cells.InfeasiblePredicted,
		"failed", sum.Cells.Failed, "profile", filepath.Join(opt.OutDir, ProfileFile))
	return sum, nil
}

// writeOutputs writes cells.csv, profile.json and manifest.json atomically.
func writeOutputs(c *Campaign, latest map[string]Result, opt RunOptions, host HostInfo, devs []gpu.DeviceInfo, mps gpu.MPSStatus, telemetry string, started time.Time) error {
	if err := fsutil.WriteFileAtomic(filepath.Join(opt.OutDir, CellsFile), CellsCSV(c, latest)); err != nil {
		return err
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
		return err
	}
	m := buildManifest(c, latest, host, devs, mps, telemetry, opt.Backend.Name(), opt.Command, started, time.Now().UTC())
	b, err := marshalIndent(m)
	if err != nil {
		return fmt.Errorf("runner: campaign %s: manifest: %w", c.Name, err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(opt.OutDir, ManifestFile), b)
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
	return devs, Env{Hostname: hostInfo().Hostname, Telemetry: sampler.Name(), MPS: &mps}
}
