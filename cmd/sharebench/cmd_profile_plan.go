package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/runner"
)

const profilePlanLong = `Project how long a campaign takes, cell by cell, before any device time is spent: each
run's window is sized by the campaign's window rule from the step times (capped at
max_seconds), warm workers are started per group and warmed up one at a time, and the shot
adds --fixed before the campaign (preflight, selftest) and --reserve after it. A projection
is not a measurement: the output names the step times and every assumption it used.

Step times (--step-times): "published" takes, per model, the median GPU part of an
iteration (resource_time_1) in Muri's 400-job V100 testbed trace (--muri-trace), whose rows
the SJF-BSBF authors' trace reuses: the rest of those iterations is data loading and the
network, which the synthetic single-GPU workloads do not have. "iteration" takes the whole
iteration instead (sharebench trace gen's built-in table), a bound far above any step of
these workloads. Both are scaled by batch for other batches and are the same for every
sub-batch of a batch. "measured:DIR" takes the solo step times of the campaign directory
DIR's journal where it has them, and the published ones elsewhere. A pair's members are
assumed to step ξ (--xi) times slower than alone. The exit status is 1 when the shot does
not fit --budget.`

// profilePlanOpts are the flags of "sharebench profile plan".
type profilePlanOpts struct {
	spec, stepTimes, format, jsonOut    string
	skipDone, muriTrace                 string
	budget, fixed, reserve, load, runOv time.Duration
	xi                                  float64
}

func newProfilePlanCmd() *cobra.Command {
	var o profilePlanOpts
	cmd := &cobra.Command{
		Use:     "plan --spec CAMPAIGN.yaml [--budget 400s] [--step-times published|measured:DIR] [flags]",
		Short:   "project a campaign's time from step times, and check it against a budget",
		Long:    profilePlanLong,
		Example: "  sharebench profile plan --spec bench/campaigns/device-check.yaml --budget 400s",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.spec, "spec", "", "campaign YAML `file` (required)")
	f.StringVar(&o.stepTimes, "step-times", "published", "`source` of step times: published, iteration or measured:DIR")
	f.StringVar(&o.muriTrace, "muri-trace", runner.MuriTestbedTrace, "Muri's testbed trace `file` (published step times)")
	f.DurationVar(&o.budget, "budget", 0, "the whole shot's wall-time budget (0: none)")
	f.DurationVar(&o.fixed, "fixed", 40*time.Second, "time of the shot before the campaign (preflight, selftest)")
	f.DurationVar(&o.reserve, "reserve", 50*time.Second, "time kept after the campaign (a cell's overrun, packaging)")
	f.DurationVar(&o.load, "worker-load", 20*time.Second, "wall time to start a group of warm workers at once (or one fresh process)")
	f.DurationVar(&o.runOv, "run-overhead", 300*time.Millisecond, "time of a run that is not its window")
	f.Float64Var(&o.xi, "xi", 2, "slowdown assumed for both members of a pair (2: fair time-slicing)")
	f.StringVar(&o.format, "format", "table", "output `format`: table or json")
	f.StringVar(&o.jsonOut, "json", "", "also write the projection as JSON to `file`")
	f.StringVar(&o.skipDone, "skip-done", "", "leave out the cells done in the campaign directory `dir` (what a rerun into it would run)")
	required(cmd, "spec")
	completeFiles(cmd, []string{"yaml", "yml"}, "spec")
	completeValues(cmd, "format", "table", "json")
	return cmd
}

// run implements "sharebench profile plan".
func (o *profilePlanOpts) run(stdout io.Writer) error {
	if o.format != "table" && o.format != "json" {
		return usagef("profile plan: --format %q: want table or json", o.format)
	}
	c, err := runner.LoadCampaign(o.spec)
	if err != nil {
		return fmt.Errorf("profile plan: %w", err)
	}
	if o.stepTimes != "published" && o.stepTimes != "iteration" && !strings.HasPrefix(o.stepTimes, "measured:") {
		return usagef("profile plan: --step-times %q: want published, iteration or measured:DIR", o.stepTimes)
	}
	steps, err := runner.StepTimes(o.stepTimes, o.muriTrace)
	if err != nil {
		return fmt.Errorf("profile plan: %w", err)
	}
	in := runner.ProjectionInputs{StepMs: steps, Xi: o.xi, WorkerLoad: o.load, RunOverhead: o.runOv,
		Fixed: o.fixed, Reserve: o.reserve, Budget: o.budget}
	if o.skipDone != "" {
		recs, _, err := runner.ReadJournal(filepath.Join(o.skipDone, runner.JournalFile))
		if err != nil {
			return fmt.Errorf("profile plan: --skip-done: %w", err)
		}
		latest := runner.Latest(recs)
		in.Done = func(cell runner.Cell) bool {
			r, ok := latest[cell.ID]
			return ok && r.Status.Done()
		}
	}
	p, err := runner.Project(c, in)
	if err != nil {
		return fmt.Errorf("profile plan: %w", err)
	}
	if o.jsonOut != "" {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return fmt.Errorf("profile plan: %w", err)
		}
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("profile plan: %w", err)
		}
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return err
		}
	} else if err := writePlan(stdout, p); err != nil {
		return err
	}
	if !p.Fits {
		return fmt.Errorf("profile plan: campaign %s: the projected shot takes %.0f s, more than its budget of %.0f s (campaign %.0f s, of which windows %.0f s, run overheads %.0f s, warm workers %.0f s); shorten its windows or drop cells",
			c.Name, p.ShotS, p.BudgetS, p.CampaignS, p.WindowS, p.SetupS, p.WorkersS)
	}
	return nil
}

// writePlan prints a projection: assumptions, worker groups, cells and the total.
func writePlan(w io.Writer, p runner.Projection) error {
	a := p.Assumptions
	fmt.Fprintf(w, "projection of campaign %s (%d cells), not a measurement\n", p.Campaign, len(p.Cells))
	for _, s := range p.Sources {
		fmt.Fprintf(w, "step times: %s\n", s)
	}
	fmt.Fprintf(w, "assumed: ξ = %g for both members of a pair; %.1f s to start a group of warm workers; %.2f s per run beyond its window; %.0f s before the campaign; %.0f s kept after it\n",
		a["xi"], a["worker_load_s"], a["run_overhead_s"], a["fixed_s"], a["reserve_s"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(p.Groups) > 0 {
		fmt.Fprintln(tw, "WORKER GROUP\tWORKERS\tLOAD_S\tWARM_S")
		for _, g := range p.Groups {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\n", g.Group, g.Workers, g.LoadS, g.WarmS)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(tw, "INDEX\tCELL\tSTEP_MS\tRUN_STEP_MS\tSTEPS\tWINDOW_S\tSETUP_S\tSHORT")
	for _, c := range p.Cells {
		short := ""
		if c.Short {
			short = "short"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\n", c.Index, c.Label, joinNums(c.StepMs, "%.0f"), joinNums(c.RunStepMs, "%.0f"),
			strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.Steps)), "+"), "[]"), c.WindowS, c.SetupS, short)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "projected campaign: %.0f s (windows %.0f s, run overheads %.0f s, warm workers %.0f s); shot %.0f s",
		p.CampaignS, p.WindowS, p.SetupS, p.WorkersS, p.ShotS)
	if p.BudgetS > 0 {
		verdict := "fits"
		if !p.Fits {
			verdict = "does not fit"
		}
		fmt.Fprintf(w, " of a %.0f s budget: %s", p.BudgetS, verdict)
	}
	fmt.Fprintln(w)
	if p.Short > 0 {
		fmt.Fprintf(w, "%d of %d cells would reach max_seconds before the window rule holds at these step times (short windows)\n", p.Short, len(p.Cells))
	}
	return nil
}

func joinNums(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, "+")
}
