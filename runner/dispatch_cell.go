package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sharebench/sharebench/runner/gpu"
)

// TaskOptions configures RunTask.
type TaskOptions struct {
	// OutDir receives the raw files under cells/ (required). When it holds a journal, pair
	// cells with reuse_solo read the solo results from it and the attempt is numbered after
	// the records there.
	OutDir string
	// Journal appends the result to OutDir's journal. Cluster tasks leave it off: their
	// dispatcher journals what they print.
	Journal bool
	// SoloJournal, when set, is read for the solo results and attempts instead of OutDir's
	// journal (Kubernetes pods get them through their ConfigMap).
	SoloJournal string
	// GPUs pins the cell (empty: the campaign's first GPUs, as positions in an inherited
	// CUDA_VISIBLE_DEVICES). Cluster tasks pass the devices the engine granted them.
	GPUs []string
	// Sampler records telemetry (nil: none).
	Sampler gpu.Sampler
	// Logger receives log lines (nil: discarded).
	Logger *slog.Logger
	// Force runs pairs predicted not to fit.
	Force bool
	// ProcRoot is where to look for MPS daemons (default /proc).
	ProcRoot string
}

// RunTask runs cell index of the resolved campaign c as one task of a dispatcher ("sharebench
// profile cell"): like Run for a single cell, with the same environment record, solo lookup
// and MPS isolation, but without scheduling. The error is for cancellation and
// infrastructure only; per-cell failures are in the Result.
func RunTask(ctx context.Context, c *Campaign, index int, b Backend, opt TaskOptions) (Result, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cell, err := c.CellByIndex(index)
	if err != nil {
		return Result{}, err
	}
	if opt.OutDir == "" {
		return Result{}, fmt.Errorf("runner: cell %s: no output directory", cell.Label)
	}
	if err := b.Probe(ctx); err != nil {
		return Result{}, fmt.Errorf("runner: cell %s: backend %s: %w", cell.Label, b.Name(), err)
	}
	src := filepath.Join(opt.OutDir, JournalFile)
	if opt.SoloJournal != "" {
		src = opt.SoloJournal
	}
	records, _, err := ReadJournal(src)
	if err != nil {
		return Result{}, err
	}
	latest := Latest(records)
	attempt := 1
	for _, r := range records {
		if r.Cell.ID == cell.ID {
			attempt++
		}
	}
	sampler := opt.Sampler
	if sampler == nil {
		sampler = gpu.None{}
	}
	devs, env := probeHost(ctx, sampler, opt.ProcRoot, log)
	gpus := opt.GPUs
	if len(gpus) == 0 && c.Workload.Device != "cpu" {
		n := min(cell.GPUs(), len(c.GPUs))
		if gpus, err = ResolveGPUs(c.GPUs[:n], os.Getenv("CUDA_VISIBLE_DEVICES")); err != nil {
			return Result{}, fmt.Errorf("runner: cell %s: %w", cell.Label, err)
		}
	}
	var gpuMem int64
	var idx []int
	if len(devs) > 0 {
		d := devs[0]
		for k, g := range gpus {
			if i := deviceFor(devs, g); i >= 0 {
				if k == 0 {
					d = devs[i]
				}
				idx = append(idx, devs[i].Index)
			}
		}
		env.GPU, env.GPUUUID, env.GPUMemBytes, env.Driver, env.CUDADriver = d.Name, d.UUID, d.MemTotalBytes, d.Driver, d.CUDA
		gpuMem = d.MemTotalBytes
	}
	if c.Workload.Device == "cpu" {
		gpus = nil
	}
	res, err := runCell(ctx, c, cell, b, CellOptions{
		OutDir: opt.OutDir, GPUs: gpus, Sampler: sampler, DeviceIndex: idx, Logger: log, Solo: SoloLookup(c, latest),
		GPUMemBytes: gpuMem, Force: opt.Force, Attempt: attempt, Env: env,
	})
	if err != nil {
		return res, err
	}
	if opt.Journal {
		j, err := OpenJournal(filepath.Join(opt.OutDir, JournalFile))
		if err != nil {
			return res, err
		}
		defer j.Close()
		if err := j.Append(res); err != nil {
			return res, err
		}
	}
	return res, nil
}
