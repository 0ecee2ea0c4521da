package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/runner/gpu"
)

// profileRun implements "sharebench profile run": run a campaign into a directory, resuming
// from its journal.
func profileRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("profile run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec := fs.String("spec", "", "campaign YAML `file` (required)")
	backend := fs.String("backend", "", "local, container or fake (default: the campaign's backend); slurm or kubernetes run every cell as a cluster task with the campaign's backend")
	out := fs.String("out", "", "output `dir` (default runs/profile/<campaign name>); rerun into it to resume")
	python := fs.String("python", "", "workload interpreter (overrides workload.python and $"+runner.EnvPython+")")
	telemetry := fs.String("telemetry", "", "auto, nvml, smi, none or fake (default: the campaign's)")
	gpus := fs.String("gpus", "", "comma-separated GPU indices or UUIDs (default: the campaign's)")
	retryFailed := fs.Bool("retry-failed", false, "rerun cells whose journal record is failed")
	force := fs.Bool("force", false, "run pairs predicted not to fit in GPU memory")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	df := addDispatchFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sharebench profile run --spec CAMPAIGN.yaml [--backend local|container|fake|slurm|kubernetes] [--out DIR] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *spec == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("profile run: --spec is required and no positional arguments are accepted")
	}
	engine := ""
	if isEngine(*backend) {
		engine, *backend = *backend, ""
	}
	c, err := loadCampaign(*spec, *python, *backend, *telemetry)
	if err != nil {
		return err
	}
	if *gpus != "" {
		c.GPUs = strings.Split(*gpus, ",")
	}
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("campaign %s: %w", filepath.Base(*spec), err)
	}
	if *out == "" {
		*out = filepath.Join("runs", "profile", c.Name)
	}
	log, err := newLogger(stderr, *logFormat)
	if err != nil {
		return err
	}
	if engine != "" {
		return dispatchCampaign(ctx, engine, c, *out, df, *retryFailed, log, "sharebench profile run "+strings.Join(args, " "), stdout)
	}
	b := newBackend(c)
	sampler, err := gpu.Open(ctx, c.Telemetry)
	if err != nil {
		return fmt.Errorf("profile run: telemetry: %w", err)
	}
	defer sampler.Close()
	var progress io.Writer
	if isTerminal(stderr) {
		progress = stderr
	}
	sum, err := runner.Run(ctx, c, runner.RunOptions{
		OutDir: *out, Backend: b, Sampler: sampler, Logger: log, Progress: progress, RetryFailed: *retryFailed,
		Force: *force, Command: "sharebench profile run " + strings.Join(args, " "),
	})
	n := sum.Cells
	fmt.Fprintf(stdout, "campaign %s: %d cells: %d ok, %d infeasible, %d predicted infeasible, %d failed, %d pending (%d run now, %d from the journal)\n",
		c.Name, n.Total, n.OK, n.Infeasible, n.InfeasiblePredicted, n.Failed, n.Pending, sum.Ran, sum.Skipped)
	fmt.Fprintf(stdout, "outputs in %s: %s, %s, %s, %s\n", *out, runner.ProfileFile, runner.CellsFile, runner.ManifestFile, runner.JournalFile)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("profile run: interrupted; completed cells are in the journal, rerun the same command to resume: %w", err)
		}
		return err
	}
	return nil
}

// profileSelftest implements "sharebench profile selftest": a protocol round trip with
// train.py --dry-run, then a 3-step real run, optionally followed by a harness-overhead
// measurement.
func profileSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("profile selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec := fs.String("spec", "", "take workload settings from this campaign `file` (optional)")
	backend := fs.String("backend", runner.BackendLocal, "local, container or fake")
	python := fs.String("python", "", "workload interpreter (default $"+runner.EnvPython+", else python3)")
	script := fs.String("script", "", "workload script (default workloads/train.py)")
	device := fs.String("device", "", "cuda or cpu (default cuda)")
	model := fs.String("model", "", "model (default resnet50; resnet18 with --device cpu)")
	batch := fs.Int("batch", 0, "global batch (default 32; 8 with --device cpu)")
	tiny := fs.Bool("tiny", false, "tiny model and inputs (implied by --device cpu)")
	threads := fs.Int("threads", 0, "workload threads (default 2)")
	telemetry := fs.String("telemetry", gpu.SourceNone, "auto, nvml, smi, none or fake")
	out := fs.String("out", "", "output `dir` for the raw files (default: a temporary directory, removed)")
	timeout := fs.Duration("timeout", 5*time.Minute, "time limit for the whole selftest")
	overhead := fs.Int("overhead", 0, "also measure the harness overhead with this many steps per run (local backend)")
	overheadRepeats := fs.Int("overhead-repeats", 3, "harness/direct run pairs for --overhead")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("profile selftest: unexpected argument %q", fs.Arg(0))
	}
	var c *runner.Campaign
	if *spec != "" {
		var err error
		if c, err = runner.LoadCampaign(*spec); err != nil {
			return err
		}
	} else {
		d := runner.DefaultCampaign()
		d.Name, d.Models = "selftest", []runner.ModelSpec{{Name: "resnet50", Batches: []int{32}}}
		c = &d
	}
	c.Backend = *backend
	c.ApplyEnv(os.Getenv)
	if *python != "" {
		c.Workload.Python = *python
	}
	if *script != "" {
		c.Workload.Script = *script
	}
	if *device != "" {
		c.Workload.Device = *device
	}
	cpu := c.Workload.Device == "cpu"
	if *tiny || cpu {
		c.Workload.Tiny = true
	}
	if *threads > 0 {
		c.Workload.Threads = *threads
	}
	if *spec == "" {
		m := &c.Models[0]
		if cpu {
			m.Name, m.Batches = "resnet18", []int{8}
		}
		if *model != "" {
			m.Name = *model
		}
		if *batch > 0 {
			m.Batches = []int{*batch}
		}
		m.MinSubBatch = 1
	}
	c.Telemetry = *telemetry
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("profile selftest: %w", err)
	}
	dir := *out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sharebench-selftest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	sampler, err := gpu.Open(ctx, c.Telemetry)
	if err != nil {
		return fmt.Errorf("profile selftest: telemetry: %w", err)
	}
	defer sampler.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	log, _ := newLogger(stderr, "text")
	fmt.Fprintf(stdout, "selftest: backend %s, %s %s, device %s, telemetry %s\n", c.Backend, c.Workload.Python, c.Workload.Script, c.Workload.Device, sampler.Name())
	steps, err := runner.Selftest(ctx, runner.SelftestOptions{Campaign: c, Backend: newBackend(c), Sampler: sampler, OutDir: dir, Logger: log})
	for _, s := range steps {
		mark := "ok  "
		if !s.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(stdout, "%s %s (%.1fs): %s\n", mark, s.Name, s.Duration.Seconds(), s.Detail)
	}
	if err != nil {
		return fmt.Errorf("profile selftest: %w", err)
	}
	if *overhead > 0 {
		if c.Backend != runner.BackendLocal {
			return errors.New("profile selftest: --overhead needs --backend local")
		}
		rep, err := runner.MeasureOverhead(ctx, c, dir, *overhead, *overheadRepeats)
		if err != nil {
			return fmt.Errorf("profile selftest: overhead: %w", err)
		}
		fmt.Fprintf(stdout, "overhead (%d steps, %d run pairs): span %.1f ms with the harness vs %.1f ms without (%+.2f%%); median step %.3f vs %.3f ms (%+.2f%%); runner timestamps vs workload step_ms %+.3f%%\n",
			rep.Steps, rep.Repeats, rep.HarnessSpanMs, rep.DirectSpanMs, rep.SpanOverheadPct, rep.HarnessStepMs, rep.DirectStepMs, rep.StepOverheadPct, rep.TimestampVsLoggedPct)
	}
	return nil
}

// newBackend returns the backend a resolved campaign asks for.
func newBackend(c *runner.Campaign) runner.Backend {
	switch c.Backend {
	case runner.BackendContainer:
		return runner.NewContainerBackend(c.Container)
	case runner.BackendFake:
		return &runner.Fake{Config: c.Fake}
	}
	return &runner.Local{}
}

// newLogger returns a slog logger on w in text or json format.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// loadCampaign reads a campaign file and applies the environment and the command-line
// overrides (empty strings keep the file's values).
func loadCampaign(path, python, backend, telemetry string) (*runner.Campaign, error) {
	c, err := runner.LoadCampaign(path)
	if err != nil {
		return nil, err
	}
	c.ApplyEnv(os.Getenv)
	if python != "" {
		c.Workload.Python = python
	}
	if backend != "" {
		c.Backend = backend
	}
	if telemetry != "" {
		c.Telemetry = telemetry
	}
	return c, nil
}
