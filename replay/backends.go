package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/trace"
)

// Srun starts each workload as a job step of the Slurm allocation the replay runs in
// ("srun --overlap" inside salloc or sbatch), on the allocation's first node, with the
// job's GPUs set as CUDA_VISIBLE_DEVICES inside the step, so the replay's placement holds
// whatever GPU binding the site gives steps.
type Srun struct {
	// Srun is the srun executable (default "srun" on PATH).
	Srun string
	// Args are extra srun options (e.g. --cpus-per-task=4).
	Args []string
	// Getenv reads the environment (default os.Getenv): SLURM_JOB_ID must be set.
	Getenv func(string) string
	local  runner.Local
}

// Name returns "slurm".
func (s *Srun) Name() string { return "slurm" }

// Probe checks that the replay runs inside an allocation and srun exists.
func (s *Srun) Probe(context.Context) error {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv("SLURM_JOB_ID") == "" {
		return errors.New("slurm: SLURM_JOB_ID is not set: run the replay inside an allocation (salloc or sbatch) that holds its GPUs")
	}
	if _, err := exec.LookPath(s.bin()); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	return nil
}

func (s *Srun) bin() string {
	if s.Srun != "" {
		return s.Srun
	}
	return "srun"
}

// Argv returns the command line that starts sp as a job step.
func (s *Srun) Argv(sp runner.Spec) []string {
	argv := []string{s.bin(), "--overlap", "--nodes=1", "--ntasks=1", "--kill-on-bad-exit=1", "--export=ALL",
		"--job-name=" + sp.Name}
	argv = append(argv, s.Args...)
	argv = append(argv, "--", "env")
	if len(sp.GPUs) > 0 {
		argv = append(argv, "CUDA_VISIBLE_DEVICES="+strings.Join(sp.GPUs, ","))
	}
	return append(append(argv, sp.Program...), sp.Args...)
}

// Start runs sp through srun; srun forwards stdin, stdout and stderr and the signals that
// stop the step.
func (s *Srun) Start(ctx context.Context, sp runner.Spec) (runner.Process, error) {
	argv := s.Argv(sp)
	sp.Program, sp.Args = argv[:1], argv[1:]
	return s.local.Start(ctx, sp)
}

// FakeConfig configures the fake workload after the profile, so that a fake replay behaves
// roughly as the profile says: each model steps at its profiled time at its batch without
// accumulation (on one GPU) and slows down next to another by the profiled ξ of that pair.
// Models the profile lacks step at the trace's iteration time. Sleep granularity, jitter and
// the fake's own accumulation model make it approximate; Virtual is the exact world.
func FakeConfig(prof *profile.Table, mm *profile.ModelMap, jobs []trace.Job, mode profile.Mode) runner.FakeConfig {
	cfg := runner.FakeConfig{StepMs: map[string]float64{}, Slowdown: map[string]float64{}, DefaultSlowdown: 1}
	cfgs := map[string]profile.Config{}
	for _, j := range jobs {
		model, batch := mm.Resolve(j.Model, j.Batch)
		if prof != nil && prof.Model(model) != nil {
			if batch == 0 {
				batch = prof.DefaultBatch(model)
			}
			c := profile.Config{Model: model, Batch: batch, SubBatch: batch}
			if d, ok := prof.IterTime(c, 1); ok {
				cfg.StepMs[model] = float64(d) / 1e6
				cfgs[model] = c
				continue
			}
		}
		if j.IterTime > 0 {
			if _, seen := cfg.StepMs[model]; !seen {
				cfg.StepMs[model] = float64(j.IterTime) / 1e6
			}
		}
	}
	names := slices.Sorted(maps.Keys(cfgs))
	for _, a := range names {
		for _, b := range names {
			if xi, ok := prof.Slowdown(cfgs[a], cfgs[b], 1, mode); ok {
				cfg.Slowdown[a+"+"+b] = max(xi, 1)
			}
		}
	}
	return cfg
}

// DeviceList returns the CUDA devices of n GPUs: ids (indices or UUIDs) when given, else 0..n−1,
// each resolved within an inherited CUDA_VISIBLE_DEVICES as CUDA numbers devices.
func DeviceList(ids []string, n int, inherited string) ([]string, error) {
	if len(ids) == 0 {
		for g := range n {
			ids = append(ids, strconv.Itoa(g))
		}
	}
	if len(ids) != n {
		return nil, fmt.Errorf("%d GPU ids for %d GPUs", len(ids), n)
	}
	return runner.ResolveGPUs(ids, inherited)
}
