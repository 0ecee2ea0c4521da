package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/dispatch"
	"github.com/sharebench/sharebench/runner"
)

// dispatchFlags are the command-line overrides of a campaign's slurm and kubernetes sections
// (profile run --backend slurm|kubernetes) and of a sweep's Slurm settings (reproduce
// --backend slurm).
type dispatchFlags struct {
	partition, account, qos, constraint, timeLimit, mem *string
	maxRunning                                          *int
	poll                                                *time.Duration
	sharebench                                          *string
	namespace, kubeContext, image, gpuProduct           *string
}

// addSlurmFlags registers the Slurm flags on fs.
func addSlurmFlags(fs *pflag.FlagSet) *dispatchFlags {
	return &dispatchFlags{
		partition:  fs.String("partition", "", "slurm: --partition for the tasks (default: the campaign's slurm.partition)"),
		account:    fs.String("account", "", "slurm: --account for the tasks"),
		qos:        fs.String("qos", "", "slurm: --qos for the tasks"),
		constraint: fs.String("constraint", "", "slurm: --constraint for the tasks (node features, e.g. h200)"),
		timeLimit:  fs.String("time", "", "slurm: time limit per task, e.g. 20:00 or 2:00:00"),
		mem:        fs.String("mem", "", "slurm: --mem per task, e.g. 32G"),
		maxRunning: fs.Int("max-running", 0, "slurm: at most this many tasks of each array run at once (--array=…%K)"),
		poll:       fs.Duration("poll", 0, "slurm: first status-polling `interval` (default 5s, backing off to 60s)"),
		sharebench: fs.String("sharebench", "", "slurm: absolute `path` of sharebench on the compute nodes (default: this executable)"),
	}
}

// addDispatchFlags registers the Slurm and Kubernetes flags on fs.
func addDispatchFlags(fs *pflag.FlagSet) *dispatchFlags {
	f := addSlurmFlags(fs)
	// Both engines use these two.
	fs.Lookup("poll").Usage = "slurm and kubernetes: first status-polling `interval` (default 5s, backing off to 60s)"
	fs.Lookup("max-running").Usage = "slurm: at most this many tasks of each array run at once (--array=…%K); kubernetes: the Job's parallelism"
	f.namespace = fs.String("namespace", "", "kubernetes: namespace of the Job (default: the campaign's kubernetes.namespace, else kubectl's)")
	f.kubeContext = fs.String("kube-context", "", "kubernetes: kubectl --context")
	f.image = fs.String("image", "", "kubernetes: image with sharebench and the workloads (default sharebench-harness:latest)")
	f.gpuProduct = fs.String("gpu-product", "", "kubernetes: node selector value for nvidia.com/gpu.product, e.g. NVIDIA-H200")
	return f
}

// applySlurm applies the flags that were given to cfg.
func (f *dispatchFlags) applySlurm(cfg *runner.SlurmConfig) {
	for _, o := range []struct {
		dst *string
		v   string
	}{
		{&cfg.Partition, *f.partition}, {&cfg.Account, *f.account}, {&cfg.QOS, *f.qos}, {&cfg.Constraint, *f.constraint},
		{&cfg.Time, *f.timeLimit}, {&cfg.Mem, *f.mem}, {&cfg.Sharebench, *f.sharebench},
	} {
		if o.v != "" {
			*o.dst = o.v
		}
	}
	if *f.maxRunning > 0 {
		cfg.MaxRunning = *f.maxRunning
	}
	if *f.poll > 0 {
		cfg.Poll = runner.Duration(*f.poll)
	}
}

// applyKube applies the flags that were given to cfg.
func (f *dispatchFlags) applyKube(cfg *runner.KubeConfig) {
	for _, o := range []struct {
		dst *string
		v   string
	}{
		{&cfg.Namespace, *f.namespace}, {&cfg.Context, *f.kubeContext}, {&cfg.Image, *f.image}, {&cfg.GPUProduct, *f.gpuProduct},
	} {
		if o.v != "" {
			*o.dst = o.v
		}
	}
	if *f.maxRunning > 0 {
		cfg.Parallelism = *f.maxRunning
	}
	if *f.poll > 0 {
		cfg.Poll = runner.Duration(*f.poll)
	}
}

// isEngine reports whether a --backend value names a cluster engine.
func isEngine(b string) bool { return b == runner.EngineSlurm || b == runner.EngineKubernetes }

// dispatchCampaign runs a resolved campaign on a cluster engine into out, sharing the local
// run's journal and outputs, and prints the same summary as "profile run".
func dispatchCampaign(ctx context.Context, engine string, c *runner.Campaign, out string, f *dispatchFlags, retryFailed bool, log *slog.Logger, command string, stdout io.Writer) error {
	var d runner.Dispatcher
	switch engine {
	case runner.EngineSlurm:
		f.applySlurm(&c.Slurm)
		d = &runner.Slurm{Config: c.Slurm, Logger: log}
	case runner.EngineKubernetes:
		f.applyKube(&c.Kubernetes)
		d = &runner.Kube{Config: c.Kubernetes, Logger: log}
	default:
		return fmt.Errorf("profile run: unknown engine %q", engine)
	}
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("campaign %s: %w", c.Name, err)
	}
	sum, err := runner.Dispatch(ctx, c, runner.DispatchOptions{OutDir: out, Dispatcher: d, RetryFailed: retryFailed, Logger: log, Command: command})
	n := sum.Cells
	fmt.Fprintf(stdout, "campaign %s on %s: %d cells: %d ok, %d infeasible, %d predicted infeasible, %d failed, %d pending (%d ended now, %d from the journal)\n",
		c.Name, engine, n.Total, n.OK, n.Infeasible, n.InfeasiblePredicted, n.Failed, n.Pending, sum.Ran, sum.Skipped)
	fmt.Fprintf(stdout, "outputs in %s: %s, %s, %s, %s; cell states: sharebench profile status %s\n", out, runner.ProfileFile, runner.CellsFile, runner.ManifestFile, runner.JournalFile, out)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("profile run: interrupted; its %s tasks were cancelled and completed cells are in the journal; rerun the same command to resume: %w", engine, err)
		}
		return err
	}
	return nil
}

// sweepFlags select where "sharebench reproduce" executes its runs.
type sweepFlags struct {
	backend     *string
	slurmDir    *string
	runsPerTask *int
	cpus        *int
	slurm       *dispatchFlags
}

// addSweepFlags registers --backend and the Slurm flags of "sharebench reproduce" on fs.
func addSweepFlags(fs *pflag.FlagSet) *sweepFlags {
	return &sweepFlags{
		backend:     fs.String("backend", "local", "where runs execute: local, or slurm (one array task per --runs-per-task runs; the same outputs)"),
		slurmDir:    fs.String("slurm-dir", "", "slurm: `directory` for the job script, run list and task logs (default runs/slurm/reproduce-<label>)"),
		runsPerTask: fs.Int("runs-per-task", 1, "slurm: runs executed one after the other by each array task"),
		cpus:        fs.Int("cpus-per-task", 1, "slurm: --cpus-per-task of each array task"),
		slurm:       addSlurmFlags(fs),
	}
}

// sweep executes runs locally (bench.Sweep) or as Slurm array tasks (bench.SweepSlurm); both
// write the same run directories below out, for the same aggregation.
// command, when set, is the sharebench invocation that runs one run of the plan on a node
// (default "reproduce --label LABEL").
func (f *sweepFlags) sweep(ctx context.Context, in *bench.Inputs, runs []bench.RunSpec, out, label string, command []string, opt bench.SweepOptions) ([]bench.Outcome, error) {
	switch *f.backend {
	case "local", "":
		return bench.Sweep(ctx, in, runs, out, opt)
	case runner.EngineSlurm:
	default:
		return nil, usagef("--backend %q: want local or slurm", *f.backend)
	}
	var cfg runner.SlurmConfig
	f.slurm.applySlurm(&cfg)
	cfg.CPUsPerTask = *f.cpus
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := *f.slurmDir
	if dir == "" {
		dir = filepath.Join("runs", "slurm", "reproduce-"+label)
		if len(command) > 0 {
			dir = filepath.Join("runs", "slurm", command[0]+"-"+label)
		}
	}
	w := opt.Progress
	if w == nil {
		w = io.Discard
	}
	log, err := newLogger(w, "text")
	if err != nil {
		return nil, err
	}
	s := &dispatch.Slurm{Config: cfg, Logger: log}
	if err := s.Probe(ctx); err != nil {
		return nil, err
	}
	return bench.SweepSlurm(ctx, runs, out, bench.SlurmSweepOptions{
		Slurm: s, Label: label, Command: command, WorkDir: dir, RunsPerTask: *f.runsPerTask, Sharebench: cfg.Sharebench, Progress: opt.Progress,
	})
}
