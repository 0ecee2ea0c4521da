package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/outdir"
	"github.com/sharebench/sharebench/internal/tmpdir"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

const simulateLong = `Replay a job trace on a simulated cluster under one scheduling policy and write a run
directory: summary.json, jobs.csv, util.csv and decisions.jsonl (docs/results-format.md).

--out is replaced as a whole when it is a run directory sharebench wrote (it carries the
.sharebench marker, or holds nothing but run files); a new or empty directory is created. Any
other non-empty directory is refused unless --force, which writes the run's files into it and
leaves everything else there alone. The directory holding --trace, --profile, --model-map or
--cluster-spec is never accepted.

On a terminal, a run that lasts more than a second tells on standard error how many of its jobs
have finished.`

const simulateExample = `  sharebench simulate --trace data/traces/muri-philly/trace2.csv --cluster 8x8 --policy sjf-bsbf \
    --profile results/profiles/gavel-v100.json --model-map bench/modelmaps/gavel.csv --out runs/trace2-bsbf`

// simulateOpts are the flags of "sharebench simulate".
type simulateOpts struct {
	trace, format, shape, spec, policy, profile, modelMap, out, restart string
	memGiB, interval, iterScale                                         float64
	maxShare                                                            int
	seed                                                                uint64
	drop, noLog, force, everyEvent                                      bool
}

func newSimulateCmd() *cobra.Command {
	var o simulateOpts
	cmd := &cobra.Command{
		Use:     "simulate --trace FILE --cluster NODESxGPUS --policy SPEC [--profile FILE] --out DIR",
		Short:   "replay a job trace on a simulated cluster under one policy",
		Long:    simulateLong,
		Example: simulateExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "job trace `file` (required)")
	f.StringVar(&o.format, "trace-format", "auto", "trace dialect: auto, canonical, muri, tiresias, philly")
	f.StringVar(&o.shape, "cluster", "", "cluster as `NODESxGPUS`, e.g. 8x8")
	f.StringVar(&o.spec, "cluster-spec", "", "the authors' cluster-spec CSV `file` (instead of --cluster)")
	f.Float64Var(&o.memGiB, "gpu-mem-gib", 0, "GPU memory in `GiB` (default: the cluster spec's, else the profile GPU's, else 48)")
	f.IntVar(&o.maxShare, "max-share", 0, "jobs allowed on one GPU at once (1 disables sharing; default: the policy's, 4 for muri-s and muri-l, else 2)")
	f.StringVar(&o.policy, "policy", "", "policy `spec`: a name from \"sharebench policies\", optionally with JSON arguments (required)")
	f.StringVar(&o.profile, "profile", "", "interference profile `file` (without one, jobs use the trace's iteration times and never share)")
	f.StringVar(&o.modelMap, "model-map", "", "model-map CSV `file` mapping trace models onto profile models")
	f.Float64Var(&o.interval, "interval", 0, "schedule every `S` seconds (0: at every arrival and completion)")
	f.Uint64Var(&o.seed, "seed", 1, "seed for trace mappings that draw at random (the Philly table)")
	f.StringVar(&o.out, "out", "", "output run `directory` (required)")
	f.BoolVar(&o.force, "force", false, "write into a non-empty --out that is not a sharebench run directory (its other files are kept)")
	f.BoolVar(&o.drop, "drop-oversized", false, "drop jobs that ask for more GPUs than the cluster has")
	f.StringVar(&o.restart, "restart-cost", "auto", "restart cost of a preempted job: auto (the profile's, else the lineage's table), profile, lineage, off, or `SECONDS`")
	f.BoolVar(&o.noLog, "no-decisions", false, "do not write decisions.jsonl")
	f.Float64Var(&o.iterScale, "iter-time-scale", 1, "multiply every step time by `X` (the Muri simulator uses 1.015)")
	f.BoolVar(&o.everyEvent, "overhead-every-event", false, "lineage effect of the Muri simulator: every running job loses min(Δ, its lineage overhead) of progress at every event")
	required(cmd, "trace", "policy", "out")
	completeFiles(cmd, nil, "trace", "cluster-spec", "profile", "model-map")
	completeDirs(cmd, "out")
	completeValues(cmd, "trace-format", "auto", "canonical", "muri", "tiresias", "philly")
	if err := cmd.RegisterFlagCompletionFunc("policy", completePolicies); err != nil {
		panic(err)
	}
	return cmd
}

// loadSimInputs reads what simulate and replay take: the profile and model map (each optional)
// and the trace. A job table without models (Philly) gets the authors' eight models with the
// profile's step times, as the experiments do, so its jobs keep their durations on one GPU.
// Unless the format is Philly, the trace is read while the profile is decoded (a trace that
// turns out to be a Philly table waits for the models); errors come in the same order either way.
func loadSimInputs(tracePath string, f trace.Format, profPath, mapPath string, seed uint64) (*profile.Table, *profile.ModelMap, []trace.Job, error) {
	var prof *profile.Table
	var mm *profile.ModelMap
	var models []trace.ModelSpec
	var err error
	load := func() error {
		if profPath != "" {
			if prof, err = profile.LoadFile(profPath); err != nil {
				return err
			}
		}
		if mapPath != "" {
			if mm, err = profile.LoadModelMapFile(mapPath); err != nil {
				return err
			}
		}
		if prof != nil {
			if models, err = bench.ProfileModels(prof, mm); err != nil && f == trace.FormatPhilly {
				return err
			}
		}
		return nil
	}
	if profPath == "" || f == trace.FormatPhilly {
		if err := load(); err != nil {
			return nil, nil, nil, err
		}
		jobs, err := trace.ReadFile(tracePath, f, trace.Options{Seed: seed, PhillyModels: models})
		if err != nil {
			return nil, nil, nil, err
		}
		return prof, mm, jobs, nil
	}
	loaded := make(chan struct{})
	type read struct {
		jobs []trace.Job
		err  error
	}
	done := make(chan read, 1)
	go func() {
		opts := trace.Options{Seed: seed, PhillyModelsFrom: func() []trace.ModelSpec {
			<-loaded
			return models
		}}
		jobs, err := trace.ReadFile(tracePath, f, opts)
		done <- read{jobs, err}
	}()
	lerr := load()
	close(loaded)
	r := <-done
	if lerr != nil {
		return nil, nil, nil, lerr
	}
	if r.err != nil {
		return nil, nil, nil, r.err
	}
	return prof, mm, r.jobs, nil
}

// completePolicies offers the policy names and aliases.
func completePolicies(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	r := builtin.Registry()
	var names []cobra.Completion
	for _, i := range r.Infos() {
		names = append(names, cobra.CompletionWithDesc(i.Name, i.Brief))
	}
	for _, a := range r.Aliases() {
		names = append(names, cobra.CompletionWithDesc(a[0], "= "+a[1]))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func (o *simulateOpts) run(ctx context.Context, stdout, stderr io.Writer) error {
	st, err := outdir.Check(o.out, outdir.Options{Kind: outdir.Run, Force: o.force,
		Inputs: []string{o.trace, o.profile, o.modelMap, o.spec}})
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	interval, err := sim.IntervalFromSeconds(o.interval)
	if err != nil {
		return usagef("simulate: --%v", err)
	}
	f, err := trace.ParseFormat(o.format)
	if err != nil {
		return err
	}
	restartCost, err := sim.ParseRestartCost(o.restart)
	if err != nil {
		return fmt.Errorf("simulate: --restart-cost: %w", err)
	}
	restoreGC := smallRunGC()
	defer restoreGC()
	prof, mm, jobs, err := loadSimInputs(o.trace, f, o.profile, o.modelMap, o.seed)
	if err != nil {
		return err
	}
	if len(jobs) > smallRunJobs {
		restoreGC()
	}
	maxShare := o.maxShare
	if maxShare == 0 {
		maxShare = builtin.DefaultMaxShare(o.policy)
	}
	shape, err := resolveShape(o.shape, o.spec, o.memGiB, maxShare, prof)
	if err != nil {
		return err
	}
	spec := bench.SimSpec{Jobs: jobs, TraceName: filepath.Base(o.trace), Shape: shape, Policy: o.policy,
		Profile: prof, ProfileName: o.profile, ModelMap: mm, Interval: interval,
		DropOversized: o.drop, Restart: restartCost, Seed: o.seed, IterScale: o.iterScale, OverheadEveryEvent: o.everyEvent}
	// A run directory of ours is replaced as a whole; into a forced foreign directory the run's
	// files are moved one by one, so that nothing else there is lost.
	dest := o.out
	if st == outdir.Foreign {
		tmp, err := tmpdir.Create(o.out, ".sharebench-run.tmp-")
		if err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		defer tmp.Remove()
		dest = filepath.Join(tmp.Path(), "run")
	}
	var line *progressLine
	if progressTerminal(stderr) {
		line = newProgressLine(stderr, time.Now)
		spec.Progress = line.report
	}
	res, err := bench.Simulate(ctx, spec, dest, !o.noLog)
	line.clear()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("simulate: interrupted; %s is left as it was", o.out)
	}
	if err != nil {
		return err
	}
	if st == outdir.Foreign {
		err = outdir.MoveInto(dest, o.out)
	} else {
		err = outdir.WriteMarker(o.out, outdir.Run)
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	s := res.Summary
	fmt.Fprintf(stdout, "%s on %s (%d jobs, %s, %d GPUs): avg JCT %.1f s, p99 %.1f s, makespan %.1f s, GPU util %.1f%%, %d shared, %d preemptions\n",
		s.Policy, s.Trace, s.Jobs, s.Cluster, s.GPUs, s.AvgJCT, s.P99JCT, s.Makespan, 100*s.GPUUtil, s.SharedJobs, s.Preemptions)
	for _, n := range s.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.out)
	return nil
}

// smallRunJobs is the most jobs a simulate run collects garbage for at GOGC=400 (smallRunGC).
const smallRunJobs = 200_000

// smallRunGC lets the garbage collector collect less often (GOGC=400) unless the user set GOGC,
// and returns the function that restores the default. A run of a few thousand jobs then hardly
// collects at all, which spares it the collections' work and the page faults of the memory they
// touch; a run of more than smallRunJobs jobs restores the default once its inputs are read, so
// that the peak memory of a million jobs stays where it was.
func smallRunGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	debug.SetGCPercent(400)
	return func() { debug.SetGCPercent(100) }
}

// resolveShape builds the cluster shape from --cluster or --cluster-spec and the memory flags.
func resolveShape(shapeFlag, specFlag string, memGiB float64, maxShare int, prof *profile.Table) (cluster.Shape, error) {
	var shape cluster.Shape
	var err error
	switch {
	case shapeFlag != "" && specFlag != "":
		return shape, errors.New("give --cluster or --cluster-spec, not both")
	case shapeFlag != "":
		shape, err = cluster.ParseShape(shapeFlag)
	case specFlag != "":
		shape, err = cluster.LoadSpecFile(specFlag)
	default:
		return shape, errors.New("--cluster or --cluster-spec is required")
	}
	if err != nil {
		return shape, err
	}
	switch {
	case !(memGiB >= 0 && memGiB <= float64(cluster.MaxGPUMemBytes/cluster.GiB)):
		return shape, fmt.Errorf("--gpu-mem-gib %g: want GiB in (0, %d]", memGiB, cluster.MaxGPUMemBytes/cluster.GiB)
	case memGiB > 0:
		shape.GPUMemBytes = int64(math.Round(memGiB * float64(cluster.GiB)))
	case shape.GPUMemBytes > 0:
	case prof != nil && prof.GPUMemBytes > 0:
		shape.GPUMemBytes = prof.GPUMemBytes
	default:
		shape.GPUMemBytes = 48 * cluster.GiB
	}
	shape.MaxShare = maxShare
	return shape, shape.Validate()
}

func newPoliciesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "policies",
		Short: "list the scheduling policies and their aliases",
		Long: `List the scheduling policies of the simulator with the code each follows, their default
arguments, and the aliases under which the SJF-BSBF authors name them. A policy spec is a
name, optionally followed by JSON arguments: sjf-bsbf{"preempt":false}.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			writePolicies(cmd.OutOrStdout())
			return nil
		},
	}
}

func writePolicies(stdout io.Writer) {
	r := builtin.Registry()
	fmt.Fprintln(stdout, "Policies (spec: NAME or NAME{JSON arguments}):")
	for _, i := range r.Infos() {
		fmt.Fprintf(stdout, "  %-9s %s\n", i.Name, i.Brief)
	}
	fmt.Fprintln(stdout, "\nDefault arguments:")
	for _, i := range r.Infos() {
		fmt.Fprintf(stdout, "  %-9s %s\n", i.Name, i.Defaults)
	}
	fmt.Fprintln(stdout, "\nAliases (the authors' names; without a suffix sjf-ffs and sjf-bsbf do not preempt):")
	for _, a := range r.Aliases() {
		fmt.Fprintf(stdout, "  %-26s = %s\n", a[0], a[1])
	}
}

// progressLine tells, on a terminal, how far a long run is: one line, redrawn at most twice a
// second from the run's first second on, cleared when the run ends.
type progressLine struct {
	w           io.Writer
	now         func() time.Time
	start, last time.Time
	drawn       bool
}

func newProgressLine(w io.Writer, now func() time.Time) *progressLine {
	return &progressLine{w: w, now: now, start: now()}
}

func (p *progressLine) report(done, total int) {
	t := p.now()
	if t.Sub(p.start) < time.Second || p.drawn && t.Sub(p.last) < time.Second/2 {
		return
	}
	p.last, p.drawn = t, true
	fmt.Fprintf(p.w, "\r\033[Ksimulate: %d of %d jobs finished (%d%%), %s", done, total, 100*done/total, t.Sub(p.start).Round(time.Second))
}

// clear erases the line if one was drawn; a nil line does nothing.
func (p *progressLine) clear() {
	if p != nil && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
