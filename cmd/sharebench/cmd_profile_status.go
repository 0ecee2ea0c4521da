package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/runner/gpu"
)

const profileStatusAbout = `Show every cell of a campaign directory: done (ok, infeasible), failed with its reason,
queued or running on a cluster engine (from dispatch.json, as of its last update), started
by a local run that has not recorded it yet, or pending. The campaign is read from the
directory (campaign.json, written before the first cell; else manifest.json or the copy
cluster tasks use) unless --spec names it.`

func newProfileStatusCmd() *cobra.Command {
	var format, spec string
	cmd := &cobra.Command{
		Use:     "status DIR [--format table|json] [--spec CAMPAIGN.yaml]",
		Short:   "show the cells of a campaign directory: done, running, failed",
		Long:    profileStatusAbout,
		Example: "  sharebench profile status runs/campaign",
		Args:    exactArgs(1, "one campaign directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return profileStatus(args[0], format, spec, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output `format`: table or json")
	cmd.Flags().StringVar(&spec, "spec", "", "campaign YAML `file` (default: the one recorded in DIR)")
	completeValues(cmd, "format", "table", "json")
	completeFiles(cmd, []string{"yaml", "yml", "json"}, "spec")
	return cmd
}

// profileStatus implements "sharebench profile status DIR".
func profileStatus(dir, format, spec string, stdout io.Writer) error {
	var err error
	var c *runner.Campaign
	if spec != "" {
		if c, err = runner.LoadCampaign(spec); err != nil {
			return fmt.Errorf("profile status: %w", err)
		}
	}
	rep, err := runner.CampaignStatus(dir, c)
	if err != nil {
		return fmt.Errorf("profile status: %w", err)
	}
	switch format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	case "table", "text":
		return writeStatusTable(stdout, rep)
	}
	return usagef("profile status: --format %q: want table or json", format)
}

// writeStatusTable prints the report as a summary line and an aligned table.
func writeStatusTable(w io.Writer, rep runner.CampaignStatusReport) error {
	n := rep.Counts
	name := rep.Campaign
	if name == "" {
		name = "(unknown)"
	}
	fmt.Fprintf(w, "campaign %s in %s: %d cells: %d ok, %d infeasible, %d predicted infeasible, %d failed, %d running, %d queued, %d started, %d pending\n",
		name, rep.Dir, n.Total, n.OK, n.Infeasible, n.InfeasiblePredicted, n.Failed, n.Running, n.Queued, n.Started, n.Pending)
	if rep.Engine != "" {
		state := "finished"
		if rep.EngineActive {
			state = "active"
		}
		updated := ""
		if rep.EngineUpdated != nil {
			updated = ", last update " + rep.EngineUpdated.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s: jobs %s (%s%s)\n", rep.Engine, strings.Join(rep.Jobs, ", "), state, updated)
	}
	if rep.SkippedLines > 0 {
		fmt.Fprintf(w, "journal: %d line(s) skipped (cut short or foreign)\n", rep.SkippedLines)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tSTATUS\tATTEMPTS\tCELL\tWHERE\tREASON")
	for _, c := range rep.Cells {
		reason := strings.Join(strings.Fields(c.Reason), " ")
		if len(reason) > 120 {
			reason = reason[:117] + "..."
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", c.Index, c.Status, c.Attempts, c.Label, c.Where, reason)
	}
	return tw.Flush()
}

const profileCellAbout = `Run one cell of a campaign and print its result record (one JSON line, the journal's
format) on standard output. This is the unit of work of the Slurm and Kubernetes tasks. With
--out, raw files go to DIR/cells/ and the record is appended to DIR/journal.jsonl (unless
--journal=false: cluster tasks leave the journal to their dispatcher); without it, to a
temporary directory that is removed. Per-cell failures are results (exit status 0); the
exit status is 1 only when no result could be produced.`

// profileCellOpts are the flags of "sharebench profile cell".
type profileCellOpts struct {
	campaign, index, indexMap, backend, out, soloJournal, gpus, python, telemetry, logFormat string
	journal, force                                                                           bool
}

func newProfileCellCmd() *cobra.Command {
	var o profileCellOpts
	cmd := &cobra.Command{
		Use:   "cell --campaign FILE --index I [--backend local|container|fake] [--out DIR]",
		Short: "run one cell of a campaign (used by Slurm and Kubernetes tasks)",
		Long:  profileCellAbout,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.campaign, "campaign", "", "campaign YAML (or JSON) `file` (required)")
	fs.StringVar(&o.index, "index", "", "cell `index` in the campaign (required)")
	fs.StringVar(&o.indexMap, "index-map", "", "`file` of cell indices, one per line: --index then selects a line (0-based)")
	fs.StringVar(&o.backend, "backend", "", "local, container or fake (default: the campaign's backend)")
	fs.StringVar(&o.out, "out", "", "campaign `dir` for raw files and the journal (default: a temporary directory, removed)")
	fs.BoolVar(&o.journal, "journal", true, "append the result to the journal in --out")
	fs.StringVar(&o.soloJournal, "solo-journal", "", "read solo results (reuse_solo) from this journal `file` instead of the one in --out")
	fs.StringVar(&o.gpus, "gpus", "", "comma-separated GPU indices or UUIDs to pin the cell to (default: the campaign's first GPU)")
	fs.StringVar(&o.python, "python", "", "workload interpreter (overrides workload.python and $"+runner.EnvPython+")")
	fs.StringVar(&o.telemetry, "telemetry", "", "auto, nvml, smi, none or fake (default: the campaign's)")
	fs.BoolVar(&o.force, "force", false, "run a pair predicted not to fit in GPU memory")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format on stderr: text or json")
	required(cmd, "campaign", "index")
	completeFiles(cmd, []string{"yaml", "yml", "json"}, "campaign")
	completeDirs(cmd, "out")
	completeValues(cmd, "backend", runner.BackendLocal, runner.BackendContainer, runner.BackendFake)
	completeValues(cmd, "telemetry", "auto", "nvml", "smi", "none", "fake")
	completeValues(cmd, "log-format", "text", "json")
	return cmd
}

// run implements "sharebench profile cell".
func (o *profileCellOpts) run(ctx context.Context, stdout, stderr io.Writer) error {
	i, err := strconv.Atoi(strings.TrimSpace(o.index))
	if err != nil {
		return usagef("profile cell: --index %q: not a number", o.index)
	}
	if o.indexMap != "" {
		if i, err = mappedIndex(o.indexMap, i); err != nil {
			return fmt.Errorf("profile cell: %w", err)
		}
	}
	c, err := loadCampaign(o.campaign, o.python, o.backend, o.telemetry)
	if err != nil {
		return err
	}
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("profile cell: %w", err)
	}
	log, err := newLogger(stderr, o.logFormat)
	if err != nil {
		return err
	}
	dir, save := o.out, o.journal
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sharebench-cell-")
		if err != nil {
			return fmt.Errorf("profile cell: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir, save = tmp, false
	}
	var pin []string
	if s := strings.TrimSpace(o.gpus); s != "" {
		pin = strings.Split(s, ",")
	}
	sampler, err := gpu.Open(ctx, c.Telemetry)
	if err != nil {
		return fmt.Errorf("profile cell: telemetry: %w", err)
	}
	defer sampler.Close()
	res, err := runner.RunTask(ctx, c, i, newBackend(c), runner.TaskOptions{
		OutDir: dir, Journal: save, SoloJournal: o.soloJournal, GPUs: pin, Sampler: sampler, Logger: log, Force: o.force,
	})
	if err != nil {
		return fmt.Errorf("profile cell: %w", err)
	}
	line, err := runner.MarshalResult(res)
	if err != nil {
		return err
	}
	_, err = stdout.Write(line)
	return err
}

// mappedIndex returns the cell index on line i (0-based) of an index-map file.
func mappedIndex(path string, i int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if n == i {
			v, err := strconv.Atoi(line)
			if err != nil {
				return 0, fmt.Errorf("%s: line %d: %q is not a cell index", path, n+1, line)
			}
			return v, nil
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return 0, fmt.Errorf("%s: no entry %d", path, i)
}
