package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sharebench/sharebench/internal/outdir"
	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/runner/gpu"
)

const profileRunLong = `Run a profiling campaign: every cell (a model alone, or two models sharing a GPU, at given
batches and sub-batches) of the campaign YAML, into --out, and write profile.json, cells.csv,
manifest.json and journal.jsonl there (docs/runner.md). Rerunning the same command resumes from
the journal. With --backend slurm or kubernetes every cell runs as a cluster task.

--out must be new, empty or a campaign directory sharebench wrote (with the .sharebench marker,
or a journal.jsonl); --force-out writes into another directory anyway, replacing only files of
the names the campaign writes. The directory holding the campaign file or the workload script
is never accepted.`

// profileRunOpts are the flags of "sharebench profile run".
type profileRunOpts struct {
	spec, backend, out, python, telemetry, gpus, logFormat string
	retryFailed, force, forceOut                           bool
	df                                                     *dispatchFlags
}

func newProfileRunCmd() *cobra.Command {
	var o profileRunOpts
	cmd := &cobra.Command{
		Use:     "run --spec CAMPAIGN.yaml [--backend local|container|fake|slurm|kubernetes] [--out DIR]",
		Short:   "run a profiling campaign (solo and pair cells) and write profile.json",
		Long:    profileRunLong,
		Example: "  sharebench profile run --spec bench/campaigns/profile-smoke.yaml --backend local --out runs/campaign",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), commandLine(cmd, args), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "spec", "", "campaign YAML `file` (required)")
	f.StringVar(&o.backend, "backend", "", "local, container or fake (default: the campaign's backend); slurm or kubernetes run every cell as a cluster task with the campaign's backend")
	f.StringVar(&o.out, "out", "", "output `dir` (default runs/profile/<campaign name>); rerun into it to resume")
	f.StringVar(&o.python, "python", "", "workload interpreter (overrides workload.python and $"+runner.EnvPython+")")
	f.StringVar(&o.telemetry, "telemetry", "", "auto, nvml, smi, none or fake (default: the campaign's)")
	f.StringVar(&o.gpus, "gpus", "", "comma-separated GPU indices or UUIDs (default: the campaign's)")
	f.BoolVar(&o.retryFailed, "retry-failed", false, "rerun cells whose journal record is failed")
	f.BoolVar(&o.force, "force", false, "run pairs predicted not to fit in GPU memory")
	f.BoolVar(&o.forceOut, "force-out", false, "write into a non-empty --out that is not a campaign directory")
	f.StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text or json")
	o.df = addDispatchFlags(f)
	required(cmd, "spec")
	completeFiles(cmd, []string{"yaml", "yml", "json"}, "spec")
	completeDirs(cmd, "out")
	completeValues(cmd, "backend", runner.BackendLocal, runner.BackendContainer, runner.BackendFake, runner.EngineSlurm, runner.EngineKubernetes)
	completeValues(cmd, "telemetry", "auto", "nvml", "smi", "none", "fake")
	completeValues(cmd, "log-format", "text", "json")
	return cmd
}

// run implements "sharebench profile run": run a campaign into a directory, resuming from its
// journal.
func (o *profileRunOpts) run(ctx context.Context, command string, stdout, stderr io.Writer) error {
	backend, out := o.backend, o.out
	engine := ""
	if isEngine(backend) {
		engine, backend = backend, ""
	}
	c, err := loadCampaign(o.spec, o.python, backend, o.telemetry)
	if err != nil {
		return err
	}
	if o.gpus != "" {
		c.GPUs = strings.Split(o.gpus, ",")
	}
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("campaign %s: %w", filepath.Base(o.spec), err)
	}
	if out == "" {
		out = filepath.Join("runs", "profile", c.Name)
	}
	log, err := newLogger(stderr, o.logFormat)
	if err != nil {
		return err
	}
	if _, err := outdir.Prepare(out, outdir.Options{Kind: outdir.Campaign, Force: o.forceOut, ForceFlag: "--force-out",
		Inputs: []string{o.spec, c.Workload.Script}}); err != nil {
		return fmt.Errorf("profile run: %w", err)
	}
	if engine != "" {
		return dispatchCampaign(ctx, engine, c, out, o.df, o.retryFailed, log, command, stdout)
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
		OutDir: out, Backend: b, Sampler: sampler, Logger: log, Progress: progress, RetryFailed: o.retryFailed,
		Force: o.force, Command: command,
	})
	n := sum.Cells
	fmt.Fprintf(stdout, "campaign %s: %d cells: %d ok, %d infeasible, %d predicted infeasible, %d failed, %d unavailable, %d pending (%d run now, %d from the journal)\n",
		c.Name, n.Total, n.OK, n.Infeasible, n.InfeasiblePredicted, n.Failed, n.Unavailable, n.Pending, sum.Ran, sum.Skipped)
	if sum.OverBudget > 0 {
		fmt.Fprintf(stdout, "budget reached: %d cells left pending; run the campaign again to continue\n", sum.OverBudget)
	}
	fmt.Fprintf(stdout, "outputs in %s: %s, %s, %s, %s\n", out, runner.ProfileFile, runner.CellsFile, runner.ManifestFile, runner.JournalFile)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("profile run: interrupted; completed cells are in the journal, rerun the same command to resume: %w", err)
		}
		return err
	}
	return nil
}

// selftestOpts are the flags of "sharebench profile selftest".
type selftestOpts struct {
	spec, backend, python, script, device, model, telemetry, out string
	batch, threads, overhead, overheadRepeats                    int
	tiny                                                         bool
	timeout                                                      time.Duration
}

func newProfileSelftestCmd() *cobra.Command {
	var o selftestOpts
	cmd := &cobra.Command{
		Use:   "selftest [--device cpu] [--backend local|container|fake] [flags]",
		Short: "check the workload protocol and one short real run on this host",
		Long: "Check the workload protocol with a train.py --dry-run round trip, then run a 3-step real\n" +
			"workload; with --overhead, also measure the harness overhead against a direct run.",
		Example: "  sharebench profile selftest --device cpu",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.spec, "spec", "", "take workload settings from this campaign `file` (optional)")
	fs.StringVar(&o.backend, "backend", runner.BackendLocal, "local, container or fake")
	fs.StringVar(&o.python, "python", "", "workload interpreter (default $"+runner.EnvPython+", else python3)")
	fs.StringVar(&o.script, "script", "", "workload script (default workloads/train.py)")
	fs.StringVar(&o.device, "device", "", "cuda or cpu (default cuda)")
	fs.StringVar(&o.model, "model", "", "model (default resnet50; resnet18 with --device cpu)")
	fs.IntVar(&o.batch, "batch", 0, "global batch (default 32; 8 with --device cpu)")
	fs.BoolVar(&o.tiny, "tiny", false, "tiny model and inputs (implied by --device cpu)")
	fs.IntVar(&o.threads, "threads", 0, "workload threads (default 2)")
	fs.StringVar(&o.telemetry, "telemetry", gpu.SourceNone, "auto, nvml, smi, none or fake")
	fs.StringVar(&o.out, "out", "", "output `dir` for the raw files (default: a temporary directory, removed)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "time limit for the whole selftest")
	fs.IntVar(&o.overhead, "overhead", 0, "also measure the harness overhead with this many steps per run (local backend)")
	fs.IntVar(&o.overheadRepeats, "overhead-repeats", 3, "harness/direct run pairs for --overhead")
	completeFiles(cmd, []string{"yaml", "yml", "json"}, "spec")
	completeDirs(cmd, "out")
	completeValues(cmd, "backend", runner.BackendLocal, runner.BackendContainer, runner.BackendFake)
	completeValues(cmd, "device", "cuda", "cpu")
	completeValues(cmd, "telemetry", "auto", "nvml", "smi", "none", "fake")
	return cmd
}

// run implements "sharebench profile selftest": a protocol round trip with train.py
// --dry-run, then a 3-step real run, optionally followed by a harness-overhead measurement.
func (o *selftestOpts) run(ctx context.Context, stdout, stderr io.Writer) error {
	var c *runner.Campaign
	if o.spec != "" {
		var err error
		if c, err = runner.LoadCampaign(o.spec); err != nil {
			return err
		}
	} else {
		d := runner.DefaultCampaign()
		d.Name, d.Models = "selftest", []runner.ModelSpec{{Name: "resnet50", Batches: []int{32}}}
		c = &d
	}
	c.Backend = o.backend
	c.ApplyEnv(os.Getenv)
	if o.python != "" {
		c.Workload.Python = o.python
	}
	if o.script != "" {
		c.Workload.Script = o.script
	}
	if o.device != "" {
		c.Workload.Device = o.device
	}
	cpu := c.Workload.Device == "cpu"
	if o.tiny || cpu {
		c.Workload.Tiny = true
	}
	if o.threads > 0 {
		c.Workload.Threads = o.threads
	}
	if o.spec == "" {
		m := &c.Models[0]
		if cpu {
			m.Name, m.Batches = "resnet18", []int{8}
		}
		if o.model != "" {
			m.Name = o.model
		}
		if o.batch > 0 {
			m.Batches = []int{o.batch}
		}
		m.MinSubBatch = 1
	}
	c.Telemetry = o.telemetry
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("profile selftest: %w", err)
	}
	dir := o.out
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
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
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
	if o.overhead > 0 {
		if c.Backend != runner.BackendLocal {
			return errors.New("profile selftest: --overhead needs --backend local")
		}
		rep, err := runner.MeasureOverhead(ctx, c, dir, o.overhead, o.overheadRepeats)
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
