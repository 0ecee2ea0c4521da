package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/sharebench/sharebench/bench"
	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// newFlags returns a FlagSet that reports errors instead of exiting and prints usage to stderr.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: sharebench %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; -h prints usage and returns errUsageShown wrapped as success.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return errUsageShown
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// errHelp means -h was given and usage was printed: the command succeeds.
var errHelp = errors.New("help shown")

func cmdSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("simulate", "simulate --trace FILE --cluster 8x8 --policy NAME [--profile FILE] --out DIR", stderr)
	tracePath := fs.String("trace", "", "job trace `file` (required)")
	format := fs.String("trace-format", "auto", "trace dialect: auto, canonical, muri, tiresias, philly")
	shapeFlag := fs.String("cluster", "", "cluster as `NODESxGPUS`, e.g. 8x8")
	specFlag := fs.String("cluster-spec", "", "the authors' cluster-spec CSV `file` (instead of --cluster)")
	memGiB := fs.Float64("gpu-mem-gib", 0, "GPU memory in GiB (default: the cluster spec's, else the profile GPU's, else 48)")
	maxShare := fs.Int("max-share", 2, "jobs allowed on one GPU at once (1 disables sharing)")
	pol := fs.String("policy", "", "policy `spec`: a name from \"sharebench policies\", optionally with JSON arguments")
	profPath := fs.String("profile", "", "interference profile `file` (without one, jobs use the trace's iteration times and never share)")
	mapPath := fs.String("model-map", "", "model-map CSV `file` mapping trace models onto profile models")
	interval := fs.Float64("interval", 0, "schedule every `S` seconds (0: at every arrival and completion)")
	seed := fs.Uint64("seed", 1, "seed for trace mappings that draw at random (the Philly table)")
	out := fs.String("out", "", "output run `directory` (required)")
	drop := fs.Bool("drop-oversized", false, "drop jobs that ask for more GPUs than the cluster has")
	restart := fs.String("restart-cost", "auto", "restart cost of a preempted job: auto (the profile's, else the lineage's table), profile, lineage, off, or `SECONDS`")
	noLog := fs.Bool("no-decisions", false, "do not write decisions.jsonl")
	iterScale := fs.Float64("iter-time-scale", 1, "multiply every step time by `X` (the Muri simulator uses 1.015)")
	everyEvent := fs.Bool("overhead-every-event", false, "lineage effect of the Muri simulator: every running job loses min(Δ, its lineage overhead) of progress at every event")
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	if *tracePath == "" || *out == "" || *pol == "" {
		fs.Usage()
		return errors.New("simulate: --trace, --policy and --out are required")
	}
	if math.IsNaN(*interval) || *interval < 0 {
		return fmt.Errorf("simulate: --interval must be ≥ 0")
	}
	f, err := trace.ParseFormat(*format)
	if err != nil {
		return err
	}
	restartCost, err := sim.ParseRestartCost(*restart)
	if err != nil {
		return fmt.Errorf("simulate: --restart-cost: %w", err)
	}
	var prof *profile.Table
	if *profPath != "" {
		if prof, err = profile.LoadFile(*profPath); err != nil {
			return err
		}
	}
	shape, err := resolveShape(*shapeFlag, *specFlag, *memGiB, *maxShare, prof)
	if err != nil {
		return err
	}
	var mm *profile.ModelMap
	if *mapPath != "" {
		if mm, err = profile.LoadModelMapFile(*mapPath); err != nil {
			return err
		}
	}
	jobs, err := trace.ReadFile(*tracePath, f, trace.Options{Seed: *seed})
	if err != nil {
		return err
	}
	spec := bench.SimSpec{Jobs: jobs, TraceName: filepath.Base(*tracePath), Shape: shape, Policy: *pol,
		Profile: prof, ProfileName: *profPath, ModelMap: mm, Interval: time.Duration(math.Round(*interval * 1e9)),
		DropOversized: *drop, Restart: restartCost, Seed: *seed, IterScale: *iterScale, OverheadEveryEvent: *everyEvent}
	res, err := bench.Simulate(ctx, spec, *out, !*noLog)
	if err != nil {
		return err
	}
	s := res.Summary
	fmt.Fprintf(stdout, "%s on %s (%d jobs, %s, %d GPUs): avg JCT %.1f s, p99 %.1f s, makespan %.1f s, GPU util %.1f%%, %d shared, %d preemptions\n",
		s.Policy, s.Trace, s.Jobs, s.Cluster, s.GPUs, s.AvgJCT, s.P99JCT, s.Makespan, 100*s.GPUUtil, s.SharedJobs, s.Preemptions)
	for _, n := range s.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// helpOK turns the -h outcome into success.
func helpOK(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
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
	case math.IsNaN(memGiB) || memGiB < 0:
		return shape, fmt.Errorf("--gpu-mem-gib must be positive")
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

func cmdPolicies(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("policies", "policies", stderr)
	if err := parseFlags(fs, args); err != nil {
		return helpOK(err)
	}
	r := policy.Builtin()
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
	return nil
}
