package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/clip"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// traceDataEnv names the environment variable that points at the shared data directory, the
// one holding traces/pollux-philly-jobs/philly.csv.
const traceDataEnv = "SHAREBENCH_DATA"

// tracePhillyRel is the Philly job table's path below the shared data directory.
const tracePhillyRel = "traces/pollux-philly-jobs/philly.csv"

func newTraceCmd() *cobra.Command {
	return newGroup("trace", "convert, validate or generate job traces",
		"Convert, validate or generate job traces. Formats: canonical, muri, tiresias, philly\n(docs/trace-formats.md).",
		newTraceConvertCmd(), newTraceValidateCmd(), newTraceGenCmd())
}

// traceReadFlags are the flags shared by the verbs that read a trace.
type traceReadFlags struct {
	in, format  *string
	seed        *uint64
	skipInvalid *bool
}

// addTraceReadFlags defines --in, --format, --seed and --skip-invalid on cmd.
func addTraceReadFlags(cmd *cobra.Command) traceReadFlags {
	fs := cmd.Flags()
	f := traceReadFlags{
		in:          fs.String("in", "", "input trace `file` (required)"),
		format:      fs.String("format", "auto", "input format: auto (by header), canonical, muri, tiresias, philly"),
		seed:        fs.Uint64("seed", 0, "seed of the Philly table's model mapping"),
		skipInvalid: fs.Bool("skip-invalid", false, "skip Philly rows with a non-positive duration or GPU count instead of failing"),
	}
	required(cmd, "in")
	completeFiles(cmd, nil, "in")
	completeValues(cmd, "format", "auto", "canonical", "muri", "tiresias", "philly")
	return f
}

// read reads the trace named by the flags. It returns the jobs in (Submit, ID) order, the
// format read and the number of skipped rows.
func (f traceReadFlags) read(verb string) ([]trace.Job, trace.Format, int, error) {
	if *f.in == "" {
		return nil, 0, 0, fmt.Errorf("trace %s: --in is required", verb)
	}
	format, err := trace.ParseFormat(*f.format)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("trace %s: --format: %w", verb, err)
	}
	fh, err := os.Open(*f.in)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("trace %s: %w", verb, err)
	}
	defer fh.Close()
	r := trace.NewReader(fh, *f.in, format, trace.Options{Seed: *f.seed, SkipInvalid: *f.skipInvalid})
	var jobs []trace.Job
	for r.Scan() {
		jobs = append(jobs, r.Job())
	}
	if err := r.Err(); err != nil {
		return nil, 0, 0, err
	}
	trace.Sort(jobs)
	return jobs, r.Format(), r.Skipped(), nil
}

func newTraceConvertCmd() *cobra.Command {
	var rf traceReadFlags
	var out *string
	cmd := &cobra.Command{
		Use:   "convert --in FILE [--format auto] [--seed N] --out FILE",
		Short: "read a trace in any known format and write it as canonical CSV",
		Long: "Read a trace and write it as canonical CSV (job_id,submit_s,num_gpu,model,batch_size,\n" +
			"iterations[,iteration_time_s]), sorted by submit time and job id. The output file is\n" +
			"replaced atomically; --out - writes to standard output.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return traceConvert(cmd.Context(), rf, *out, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	rf = addTraceReadFlags(cmd)
	out = cmd.Flags().String("out", "", "output `file`, or - for standard output (required)")
	required(cmd, "out")
	completeFiles(cmd, nil, "out")
	return cmd
}

// traceConvert implements "sharebench trace convert".
func traceConvert(ctx context.Context, rf traceReadFlags, out string, stdout, stderr io.Writer) error {
	if out == "" {
		return usagef("trace convert: --out is required")
	}
	if sameFile(out, *rf.in) {
		return usagef("trace convert: --out %s is the input; write the canonical trace to another file", out)
	}
	jobs, _, skipped, err := rf.read("convert")
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("trace convert: %w", err)
	}
	msg := stdout
	if out == "-" {
		msg = stderr // keep standard output for the trace
	}
	if err := traceWriteFile(out, jobs, stdout); err != nil {
		return fmt.Errorf("trace convert: %w", err)
	}
	if skipped > 0 {
		fmt.Fprintf(msg, "skipped %d invalid rows\n", skipped)
	}
	fmt.Fprintf(msg, "wrote %d jobs to %s\n", len(jobs), out)
	return nil
}

func newTraceValidateCmd() *cobra.Command {
	var rf traceReadFlags
	var clusterFlag *string
	cmd := &cobra.Command{
		Use:   "validate --in FILE [--format auto] [--cluster NODESxGPUS]",
		Short: "read a trace, report errors and a summary (GPU demand, arrivals, load)",
		Long: "Read a trace and report the job count, the GPU-demand histogram, the models, the arrival\n" +
			"span, the total GPU-hours and, with --cluster, the offered load on that cluster. Any\n" +
			"malformed row, or with --cluster any job larger than the cluster, is an error.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return traceValidate(cmd.Context(), rf, *clusterFlag, cmd.OutOrStdout())
		},
	}
	rf = addTraceReadFlags(cmd)
	clusterFlag = cmd.Flags().String("cluster", "", "cluster as `NODESxGPUS`, e.g. 4x8, for the offered load and the size check")
	return cmd
}

// traceValidate implements "sharebench trace validate".
func traceValidate(ctx context.Context, rf traceReadFlags, clusterFlag string, stdout io.Writer) error {
	clusterGPUs := 0
	if clusterFlag != "" {
		shape, err := cluster.ParseShape(clusterFlag)
		if err != nil {
			return usagef("trace validate: --%w", err)
		}
		clusterGPUs = shape.GPUs()
	}
	jobs, format, skipped, err := rf.read("validate")
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("trace validate: %w", err)
	}
	s := traceSummarize(jobs)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "file\t%s\n", *rf.in)
	fmt.Fprintf(tw, "format\t%s\n", format)
	fmt.Fprintf(tw, "jobs\t%d\n", len(jobs))
	if skipped > 0 {
		fmt.Fprintf(tw, "skipped\t%d invalid rows\n", skipped)
	}
	fmt.Fprintf(tw, "models\t%s\n", traceCounts(s.models))
	fmt.Fprintf(tw, "arrivals\t%s … %s (span %s)\n", traceSeconds(s.first), traceSeconds(s.last), traceSeconds(s.last-s.first))
	fmt.Fprintf(tw, "GPU-hours\t%.2f (%d of %d jobs have an iteration time)\n", s.gpuSeconds/3600, s.timed, len(jobs))
	if clusterGPUs > 0 {
		switch {
		case s.last == s.first:
			fmt.Fprintf(tw, "load\tn/a on %s: all jobs arrive at once\n", clusterFlag)
		default:
			load := s.gpuSeconds / (float64(clusterGPUs) * (s.last - s.first).Seconds())
			fmt.Fprintf(tw, "load\t%.4f on %s (%d GPUs): GPU-seconds ÷ (GPUs × arrival span)\n", load, clusterFlag, clusterGPUs)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("trace validate: %w", err)
	}
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "GPUs\tjobs\tshare\t\n")
	for _, g := range slices.Sorted(maps.Keys(s.gpus)) {
		fmt.Fprintf(tw, "%d\t%d\t%.1f%%\t\n", g, s.gpus[g], 100*float64(s.gpus[g])/float64(len(jobs)))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("trace validate: %w", err)
	}
	if clusterGPUs > 0 {
		if _, _, err := trace.DropOversized(jobs, *rf.in, clusterGPUs, false); err != nil {
			return fmt.Errorf("trace validate: on %s: %w", clusterFlag, err)
		}
	}
	return nil
}

// traceSummary holds the figures "trace validate" reports.
type traceSummary struct {
	gpus        map[int]int    // jobs by gang size
	models      map[string]int // jobs by model
	first, last time.Duration  // earliest and latest submit time
	gpuSeconds  float64        // Σ GPUs × Iters × IterTime over jobs with an IterTime
	timed       int            // jobs with an IterTime
}

// traceSummarize computes the summary of jobs sorted by submit time.
func traceSummarize(jobs []trace.Job) traceSummary {
	s := traceSummary{gpus: map[int]int{}, models: map[string]int{}}
	if len(jobs) > 0 {
		s.first, s.last = jobs[0].Submit, jobs[len(jobs)-1].Submit
	}
	for _, j := range jobs {
		s.gpus[j.GPUs]++
		s.models[j.Model]++
		if j.IterTime > 0 {
			s.timed++
			s.gpuSeconds += float64(j.GPUs) * float64(j.Iters) * j.IterTime.Seconds()
		}
	}
	return s
}

// traceCounts formats counts by name as "a 3, b 1", sorted by name.
func traceCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// traceSeconds formats d as decimal seconds with at most three decimals, e.g. "597.98s".
func traceSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + "s"
}

// traceGenOpts are the flags of "sharebench trace gen".
type traceGenOpts struct {
	jobs                                  int
	load                                  float64
	cluster, philly, models, profile, out string
	seed                                  uint64
	skipInvalid                           bool
}

func newTraceGenCmd() *cobra.Command {
	var o traceGenOpts
	cmd := &cobra.Command{
		Use:   "gen --jobs N --load L --cluster NODESxGPUS [--seed N] [--philly FILE] [--models m1,m2,...] [--profile FILE] --out FILE",
		Short: "generate a trace with Poisson arrivals at a given load from the Philly job table",
		Long: "Generate a canonical trace: Poisson arrivals at the offered load L on the cluster\n" +
			"(load = Σ GPUs × duration ÷ (cluster GPUs × arrival span)), with (GPUs, duration) pairs\n" +
			"drawn from the rows of the Philly job table that fit the cluster and models drawn with\n" +
			"equal weights. Without --philly, the table is $" + traceDataEnv + "/" + tracePhillyRel + ", else data/" + tracePhillyRel + ".\n" +
			"Iteration times come from the built-in table of the authors' eight models or, with\n" +
			"--profile, from the profile: each model's 1-GPU step time at its default batch.",
		Example: "  sharebench trace gen --jobs 1000 --load 0.8 --cluster 8x8 --seed 1 \\\n" +
			"    --philly data/" + tracePhillyRel + " --out synthetic.csv",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return traceGen(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.jobs, "jobs", 0, "number of jobs to generate (required)")
	f.Float64Var(&o.load, "load", 0, "target offered load on the cluster, e.g. 0.9 (required)")
	f.StringVar(&o.cluster, "cluster", "", "cluster as `NODESxGPUS`, e.g. 8x8 (required)")
	f.Uint64Var(&o.seed, "seed", 0, "random seed; equal flags and seed give identical traces")
	f.StringVar(&o.philly, "philly", "", "Philly job table `file` (default: $"+traceDataEnv+"/"+tracePhillyRel+", else data/"+tracePhillyRel+")")
	f.StringVar(&o.models, "models", "", "comma-separated models to draw from (default: all of the built-in table or of the profile)")
	f.StringVar(&o.profile, "profile", "", "profile `file` giving the models, their default batches and step times")
	f.BoolVar(&o.skipInvalid, "skip-invalid", false, "skip Philly rows with a non-positive duration or GPU count instead of failing")
	f.StringVar(&o.out, "out", "", "output `file`, or - for standard output (required)")
	required(cmd, "jobs", "load", "cluster", "out")
	completeFiles(cmd, nil, "philly", "profile", "out")
	return cmd
}

// traceGen implements "sharebench trace gen".
func traceGen(ctx context.Context, o traceGenOpts, stdout, stderr io.Writer) error {
	switch {
	case o.jobs <= 0 || o.jobs > trace.MaxGenJobs:
		return usagef("trace gen: --jobs %d: want a number of jobs in [1, %d]", o.jobs, trace.MaxGenJobs)
	case !(o.load > 0):
		return usagef("trace gen: --load must be a positive number")
	case o.cluster == "":
		return usagef("trace gen: --cluster is required")
	case o.out == "":
		return usagef("trace gen: --out is required")
	}
	shape, err := cluster.ParseShape(o.cluster)
	if err != nil {
		return usagef("trace gen: --%w", err)
	}
	models, notes, err := traceGenModels(o.models, o.profile)
	if err != nil {
		return fmt.Errorf("trace gen: %w", err)
	}
	path, err := tracePhillyFile(o.philly)
	if err != nil {
		return fmt.Errorf("trace gen: %w", err)
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("trace gen: %w", err)
	}
	pool, skipped, err := trace.ReadPhillyPool(fh, path, trace.Options{SkipInvalid: o.skipInvalid})
	fh.Close()
	if err != nil {
		return fmt.Errorf("trace gen: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("trace gen: %w", err)
	}
	gpus := shape.GPUs()
	draw := func(load float64) ([]trace.Job, error) {
		rng := rand.New(rand.NewPCG(o.seed, traceStream("trace gen")))
		return trace.Generate(trace.GenConfig{Jobs: o.jobs, Load: load, GPUs: gpus, Pool: pool, Models: models}, rng)
	}
	// The generator's arrival rate is proportional to its load argument and every other draw is
	// independent of it, so the trace drawn at load 1 fixes the jobs; its offered load A then
	// calibrates the rate: drawing at load/A gives the same jobs with arrivals compressed by
	// exactly that factor, i.e. the target offered load (up to nanosecond rounding).
	unit, err := draw(1)
	if err != nil {
		return err
	}
	generated := unit
	if a := offeredLoad(traceSummarize(unit), gpus); a > 0 {
		if generated, err = draw(o.load / a); err != nil {
			return err
		}
	}
	msg := stdout
	if o.out == "-" {
		msg = stderr
	}
	if err := traceWriteFile(o.out, generated, stdout); err != nil {
		return fmt.Errorf("trace gen: %w", err)
	}
	s := traceSummarize(generated)
	for _, n := range notes {
		fmt.Fprintf(msg, "note: %s\n", n)
	}
	if skipped > 0 {
		fmt.Fprintf(msg, "skipped %d invalid rows of %s\n", skipped, path)
	}
	fmt.Fprintf(msg, "wrote %d jobs to %s\n", len(generated), o.out)
	if got := offeredLoad(s, gpus); got > 0 {
		fmt.Fprintf(msg, "offered load %.4f on %s (target %v), arrival span %s\n", got, o.cluster, o.load, traceSeconds(s.last-s.first))
		if math.Abs(got/o.load-1) > 0.02 {
			return fmt.Errorf("trace gen: the trace's offered load %.4f misses the target %v by more than 2%% (too few jobs for its arrival span?)", got, o.load)
		}
	}
	return nil
}

// offeredLoad is Σ GPUs × duration ÷ (cluster GPUs × arrival span), 0 without a span.
func offeredLoad(s traceSummary, gpus int) float64 {
	span := (s.last - s.first).Seconds()
	if span <= 0 {
		return 0
	}
	return s.gpuSeconds / (float64(gpus) * span)
}

// traceGenModels returns the models "trace gen" draws from: the built-in table or the
// profile's models, restricted to the comma-separated list when one is given. The notes name
// profile models left out for want of a 1-GPU step time at their default batch.
func traceGenModels(list, profPath string) (models []trace.ModelSpec, notes []string, err error) {
	var all []trace.ModelSpec
	source := "built-in models"
	if profPath == "" {
		all = trace.DefaultModels()
	} else {
		prof, err := profile.LoadFile(profPath)
		if err != nil {
			return nil, nil, err
		}
		source = "models of " + profPath
		for _, name := range prof.ModelNames() {
			b := prof.DefaultBatch(name)
			it, ok := prof.IterTime(profile.Config{Model: name, Batch: b, SubBatch: b}, 1)
			if !ok {
				if list == "" {
					notes = append(notes, fmt.Sprintf("model %s left out: %s has no 1-GPU step time at its default batch %d", name, profPath, b))
					continue
				}
			}
			all = append(all, trace.ModelSpec{Name: name, Batch: b, IterTime: it, Weight: 1})
		}
	}
	if list == "" {
		if len(all) == 0 {
			return nil, nil, fmt.Errorf("%s: no model has a 1-GPU step time at its default batch", profPath)
		}
		return all, notes, nil
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(m trace.ModelSpec) bool { return m.Name == name })
		if i < 0 {
			var known []string
			for _, m := range all {
				known = append(known, m.Name)
			}
			slices.Sort(known)
			return nil, nil, fmt.Errorf("--models: unknown model %s (%s: %s)", clip.Quote(name), source, strings.Join(known, ", "))
		}
		if all[i].IterTime <= 0 {
			return nil, nil, fmt.Errorf("--models: %s has no 1-GPU step time for %s at its default batch %d", profPath, name, all[i].Batch)
		}
		if !slices.ContainsFunc(models, func(m trace.ModelSpec) bool { return m.Name == name }) {
			models = append(models, all[i])
		}
	}
	return models, nil, nil
}

// tracePhillyFile returns the Philly table to read: the --philly flag, else the table under
// $SHAREBENCH_DATA, else the copy shipped in the repository's data/ when run from its root.
func tracePhillyFile(flagPath string) (string, error) {
	if flagPath != "" {
		return flagPath, nil
	}
	if dir := os.Getenv(traceDataEnv); dir != "" {
		p := filepath.Join(dir, filepath.FromSlash(tracePhillyRel))
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("no Philly job table: %w (set by %s; or pass --philly FILE)", err, traceDataEnv)
		}
		return p, nil
	}
	if p := filepath.Join("data", filepath.FromSlash(tracePhillyRel)); traceExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("no Philly job table: pass --philly FILE, or set %s to the data directory holding %s", traceDataEnv, tracePhillyRel)
}

// sameFile reports whether the paths name one existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

func traceExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// traceStream derives the second PCG seed word of a random stream from its purpose, so that
// streams for different purposes never coincide.
func traceStream(purpose string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return h.Sum64()
}

// traceWriteFile writes jobs in the canonical format to path, atomically: through a temporary
// file in the same directory that is renamed over path. The path "-" means stdout.
func traceWriteFile(path string, jobs []trace.Job, stdout io.Writer) error {
	if path == "-" {
		return trace.Write(stdout, jobs)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := trace.Write(tmp, jobs); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
