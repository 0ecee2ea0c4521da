package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/internal/outdir"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/replay"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

const replayLong = `Run a job trace for real: the policy decides, through the simulator's own engine fed with
the workloads' measured progress, which workload processes start, share a GPU and stop, on the
wall clock. Jobs run their trace iterations of the named model at its batch and the chosen
sub-batch; a preempted job starts again from its last completed iteration. The run directory
has the simulator's files (summary.json, jobs.csv, util.csv, decisions.jsonl) with the real
times, the raw step logs (steps/), segments.csv, attempts.csv and replay.json; --simulate also
simulates the same inputs into sim/ and compares them (fidelity/, see "sharebench fidelity").

Backends: local (processes here), container (docker or podman), slurm (job steps of the
allocation the command runs in), fake (the fake workload, stepping as the profile says,
approximately), virtual (no processes: a world in virtual time that progresses exactly as the
profile says; its replay equals the simulation). The cluster is one node of --gpus GPUs;
--device cpu runs every "GPU" on the CPU (with --tiny models). docs/replay.md has the details.`

const replayExample = `  sharebench replay --trace bench/traces/replay12.csv --policy sjf-bsbf --profile PROFILE.json \
    --backend local --gpus 1 --out runs/replay12-bsbf --simulate`

type replayOpts struct {
	trace, format, policy, profile, modelMap, backend, out, restart, device, python, script string
	gpuIDs, image, engine, workloadsDir                                                     string
	gpus, maxShare, threads                                                                 int
	memGiB, interval, timeScale                                                             float64
	seed                                                                                    int64
	simulate, tiny, quiet                                                                   bool
	args, srunArgs                                                                          []string
	grace, ready, stall                                                                     time.Duration
}

func newReplayCmd() *cobra.Command {
	var o replayOpts
	cmd := &cobra.Command{
		Use:     "replay --trace FILE --policy SPEC [--profile FILE] --backend NAME --gpus N --out DIR",
		Short:   "run a job trace for real under a policy, and compare it with its simulation",
		Long:    replayLong,
		Example: replayExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "job trace `file` (required)")
	f.StringVar(&o.format, "trace-format", "auto", "trace dialect: auto, canonical, muri, tiresias")
	f.StringVar(&o.policy, "policy", "", "built-in policy `spec` (required)")
	f.StringVar(&o.profile, "profile", "", "interference profile `file` (without one, jobs use the trace's iteration times and never share)")
	f.StringVar(&o.modelMap, "model-map", "", "model-map CSV `file` mapping trace models onto profile (and workload) models")
	f.StringVar(&o.backend, "backend", "local", "where workloads run: local, container, slurm, fake, virtual")
	f.IntVar(&o.gpus, "gpus", 1, "GPUs of the one-node cluster")
	f.StringVar(&o.gpuIDs, "gpu-ids", "", "CUDA devices of the cluster's GPUs, comma-separated `IDS` (default 0..N-1, within an inherited CUDA_VISIBLE_DEVICES)")
	f.Float64Var(&o.memGiB, "gpu-mem-gib", 0, "GPU memory in `GiB` (default: the profile GPU's, else 48)")
	f.IntVar(&o.maxShare, "max-share", 2, "jobs allowed on one GPU at once (1 disables sharing)")
	f.Float64Var(&o.interval, "interval", 0, "schedule every `S` seconds (0: at every arrival and completion)")
	f.StringVar(&o.restart, "restart-cost", "auto", "restart cost the engine's state and the simulation assume: auto, profile, lineage, off or `SECONDS` (the replay pays the real one)")
	f.Float64Var(&o.timeScale, "time-scale", 1, "multiply every submit time by `X` (e.g. 0.5 halves the arrival span)")
	f.StringVar(&o.out, "out", "", "output run `directory` (required)")
	f.BoolVar(&o.simulate, "simulate", false, "also simulate the same inputs into DIR/sim and print the fidelity summary")
	f.StringVar(&o.device, "device", "cuda", "cuda or cpu")
	f.BoolVar(&o.tiny, "tiny", false, "small models and inputs for CPU runs (train.py --tiny)")
	f.StringVar(&o.python, "python", "", "Python interpreter for the workloads (default $"+runner.EnvPython+", else python3)")
	f.StringVar(&o.script, "script", filepath.Join("workloads", "train.py"), "workload `script`")
	f.IntVar(&o.threads, "threads", 2, "CPU threads per workload process")
	f.Int64Var(&o.seed, "seed", 1, "workload seed (weights and synthetic data)")
	f.StringArrayVar(&o.args, "workload-arg", nil, "extra workload argument (repeatable), e.g. --workload-arg=--precision=strict-fp32")
	f.StringVar(&o.image, "image", "", "container image (--backend container)")
	f.StringVar(&o.engine, "engine", "docker", "container engine: docker or podman")
	f.StringVar(&o.workloadsDir, "workloads-dir", "", "host directory mounted at /opt/sharebench in containers (default: the script's)")
	f.StringArrayVar(&o.srunArgs, "srun-arg", nil, "extra srun option (repeatable, --backend slurm)")
	f.DurationVar(&o.grace, "grace", 30*time.Second, "time a stopped workload may take to exit before it is killed")
	f.DurationVar(&o.ready, "ready-timeout", 10*time.Minute, "longest launch until a workload's first step")
	f.DurationVar(&o.stall, "stall-timeout", 5*time.Minute, "longest gap between two steps of a workload")
	f.BoolVar(&o.quiet, "quiet", false, "do not print the decisions as they happen")
	required(cmd, "trace", "policy", "out")
	completeFiles(cmd, nil, "trace", "profile", "model-map", "script")
	completeDirs(cmd, "out", "workloads-dir")
	completeValues(cmd, "backend", "local", "container", "slurm", "fake", "virtual")
	completeValues(cmd, "device", "cuda", "cpu")
	if err := cmd.RegisterFlagCompletionFunc("policy", completePolicies); err != nil {
		panic(err)
	}
	return cmd
}

func (o *replayOpts) run(ctx context.Context, stdout, stderr io.Writer) error {
	if _, err := outdir.Check(o.out, outdir.Options{Kind: replay.OutKind, Inputs: []string{o.trace, o.profile, o.modelMap, o.script}}); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	switch {
	case o.gpus < 1 || o.gpus > 1024:
		return usagef("replay: --gpus %d: want 1 to 1024", o.gpus)
	case !(o.timeScale > 0) || o.timeScale > 1e6:
		return usagef("replay: --time-scale must be in (0, 1e6]")
	case o.device != "cuda" && o.device != "cpu":
		return usagef("replay: --device %q: want cuda or cpu", o.device)
	}
	interval, err := sim.IntervalFromSeconds(o.interval)
	if err != nil {
		return usagef("replay: --interval: %v", err)
	}
	f, err := trace.ParseFormat(o.format)
	if err != nil {
		return err
	}
	restart, err := sim.ParseRestartCost(o.restart)
	if err != nil {
		return fmt.Errorf("replay: --restart-cost: %w", err)
	}
	prof, mm, jobs, err := loadSimInputs(o.trace, f, o.profile, o.modelMap, uint64(o.seed))
	if err != nil {
		return err
	}
	shape, err := resolveShape("1x"+strconv.Itoa(o.gpus), "", o.memGiB, o.maxShare, prof)
	if err != nil {
		return err
	}
	name := filepath.Base(o.trace)
	if prof != nil {
		if err := bench.CheckModels(jobs, name, prof, mm); err != nil {
			return err
		}
	}
	if _, _, err := trace.DropOversized(jobs, name, shape.GPUs(), false); err != nil {
		return fmt.Errorf("%w (the replay has %d GPUs)", err, shape.GPUs())
	}
	spec := replay.Spec{Jobs: jobs, TraceName: name, Shape: shape, Policy: o.policy, Profile: prof, ProfileName: o.profile,
		ModelMap: mm, Interval: interval, Restart: restart, Seed: uint64(o.seed), TimeScale: o.timeScale}
	newWorld, man, err := o.world(spec)
	if err != nil {
		return err
	}
	man.Command = "sharebench " + strings.Join(os.Args[1:], " ")
	man.Trace, man.Policy, man.Profile, man.TimeScale = o.trace, o.policy, o.profile, o.timeScale
	man.Host, _ = os.Hostname()
	man.Started = time.Now().UTC().Format(time.RFC3339)
	var progress io.Writer
	if !o.quiet {
		progress = stderr
	}
	fmt.Fprintf(stderr, "replay: %d jobs of %s under %s on %d GPU(s), backend %s, into %s\n", len(jobs), name, o.policy, o.gpus, o.backend, o.out)
	oc, err := replay.Execute(ctx, spec, replay.Options{Out: o.out, NewWorld: newWorld, Backend: o.backend, Simulate: o.simulate,
		Manifest: man, Progress: progress})
	if err != nil {
		return err
	}
	s := oc.Result.Summary
	fmt.Fprintf(stdout, "%s on %s (%d jobs, %d GPUs, %s backend): avg JCT %.1f s, makespan %.1f s, %d shared, %d preemptions, restarts %.1f s\n",
		s.Policy, s.Trace, s.Jobs, s.GPUs, o.backend, s.AvgJCT, s.Makespan, s.SharedJobs, s.Preemptions, s.RestartS)
	if oc.Fidelity != nil {
		for _, l := range oc.Fidelity.Lines() {
			fmt.Fprintln(stdout, l)
		}
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.out)
	return nil
}

// world returns the constructor of the backend's world and the manifest's description of it.
func (o *replayOpts) world(spec replay.Spec) (func(string) (replay.World, error), replay.Manifest, error) {
	man := replay.Manifest{Device: o.device}
	if o.backend == "virtual" {
		man.Device = "none"
		return func(string) (replay.World, error) {
			return replay.NewVirtual(spec.Profile, spec.ModelMap, spec.Restart), nil
		}, man, nil
	}
	python := o.python
	if python == "" {
		python = cmpStr(os.Getenv(runner.EnvPython), "python3")
	}
	cfg := replay.ProcConfig{Program: []string{python, o.script}, Device: o.device, Tiny: o.tiny, Threads: o.threads, Seed: o.seed,
		Args: o.args, ModelMap: spec.ModelMap, Grace: o.grace, Ready: o.ready, Stall: o.stall}
	switch o.backend {
	case "local":
		cfg.Backend = &runner.Local{}
	case "slurm":
		cfg.Backend = &replay.Srun{Args: o.srunArgs}
	case "container":
		if o.image == "" {
			return nil, man, usagef("replay: --backend container needs --image")
		}
		dir := o.workloadsDir
		if dir == "" {
			dir = filepath.Dir(o.script)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, man, err
		}
		cfg.Backend = runner.NewContainerBackend(runner.ContainerConfig{Engine: o.engine})
		cfg.Program = []string{"python3", "/opt/sharebench/" + filepath.Base(o.script)}
		cfg.Image, cfg.Mounts = o.image, []runner.Mount{{Host: abs, Container: "/opt/sharebench", ReadOnly: true}}
		man.Image = o.image
	case "fake":
		cfg.Device, man.Device = "cpu", "fake"
		mode := profile.Timeslice
		if p, err := builtin.Registry().New(spec.Policy); err == nil {
			if m, ok := p.(policy.Moder); ok {
				mode = m.Mode()
			}
		}
		cfg.Backend = &runner.Fake{Config: replay.FakeConfig(spec.Profile, spec.ModelMap, spec.Jobs, mode)}
	default:
		return nil, man, usagef("replay: --backend %q: want local, container, slurm, fake or virtual", o.backend)
	}
	if o.backend != "fake" {
		man.Program = cfg.Program
	}
	if cfg.Device == "cuda" {
		var ids []string
		if o.gpuIDs != "" {
			ids = strings.Split(o.gpuIDs, ",")
		}
		devs, err := replay.DeviceList(ids, o.gpus, os.Getenv("CUDA_VISIBLE_DEVICES"))
		if err != nil {
			return nil, man, usagef("replay: --gpu-ids: %v", err)
		}
		cfg.Devices, man.Devices = devs, devs
	}
	return func(steps string) (replay.World, error) {
		c := cfg
		c.Dir = steps
		return replay.NewProcs(c)
	}, man, nil
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// newFidelityCmd is "sharebench fidelity REAL_RUN SIM_RUN".
func newFidelityCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "fidelity REAL_RUN SIM_RUN",
		Short: "compare a physical replay with its simulation: JCT errors and the first diverging decision",
		Long: `Compare the run directory of a physical replay ("sharebench replay") with the simulation of the same
trace, profile and policy: per-job JCT error, average-JCT and makespan error, and the first
decision at which the two decision logs differ, with its likely causes (the measured step times
and launch times against the profile's). Prints the tables; --out also writes them as md, csv and
LaTeX with two figures (measured vs simulated JCT per job, both JCT CDFs).`,
		Example: "  sharebench fidelity runs/replay12-bsbf runs/replay12-bsbf/sim --format md",
		Args:    exactArgs(2, "a replay run directory and a simulation run directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ft, err := analysis.ParseFormat(format)
			if err != nil {
				return usagef("fidelity: --format: %v", err)
			}
			rep, err := replay.Compare(args[0], args[1])
			if err != nil {
				return err
			}
			if out != "" {
				if _, err := outdir.Prepare(out, outdir.Options{Kind: "fidelity", Inputs: args}); err != nil {
					return fmt.Errorf("fidelity: %w", err)
				}
				if err := replay.WriteFidelity(out, rep); err != nil {
					return err
				}
			}
			if err := analysis.RenderAll(cmd.OutOrStdout(), ft, rep.Tables()...); err != nil {
				return err
			}
			if out != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "table format: text, md, csv, latex")
	cmd.Flags().StringVar(&out, "out", "", "also write the tables and figures into `DIR`")
	completeValues(cmd, "format", "text", "md", "csv", "latex")
	completeDirs(cmd, "out")
	return cmd
}
