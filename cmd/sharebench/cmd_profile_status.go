package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sharebench/sharebench/runner"
	"github.com/sharebench/sharebench/runner/gpu"
)

const profileStatusAbout = `Show every cell of a campaign directory: done (ok, infeasible), failed with its reason,
queued or running on a cluster engine (from dispatch.json, as of its last update), started
by a local run that has not recorded it yet, or pending. The campaign is read from the
directory (manifest.json, or the copy cluster tasks use) unless --spec names it.`

// profileStatus implements "sharebench profile status DIR".
func profileStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := analysisFlags("profile status", "profile status DIR [--format table|json] [--spec CAMPAIGN.yaml]", profileStatusAbout, stderr)
	format := fs.String("format", "table", "output `format`: table or json")
	spec := fs.String("spec", "", "campaign YAML `file` (default: the one recorded in DIR)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 1 {
		return fmt.Errorf("profile status: want one campaign directory, got %d arguments", len(pos))
	}
	var c *runner.Campaign
	if *spec != "" {
		if c, err = runner.LoadCampaign(*spec); err != nil {
			return fmt.Errorf("profile status: %w", err)
		}
	}
	rep, err := runner.CampaignStatus(pos[0], c)
	if err != nil {
		return fmt.Errorf("profile status: %w", err)
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	case "table", "text":
		return writeStatusTable(stdout, rep)
	}
	return fmt.Errorf("profile status: --format %q: want table or json", *format)
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

// profileCell implements "sharebench profile cell".
func profileCell(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := analysisFlags("profile cell", "profile cell --campaign FILE --index I [--backend local|container|fake] [--out DIR] [flags]", profileCellAbout, stderr)
	campaign := fs.String("campaign", "", "campaign YAML (or JSON) `file` (required)")
	index := fs.String("index", "", "cell `index` in the campaign (required)")
	indexMap := fs.String("index-map", "", "`file` of cell indices, one per line: --index then selects a line (0-based)")
	backend := fs.String("backend", "", "local, container or fake (default: the campaign's backend)")
	out := fs.String("out", "", "campaign `dir` for raw files and the journal (default: a temporary directory, removed)")
	journal := fs.Bool("journal", true, "append the result to the journal in --out")
	soloJournal := fs.String("solo-journal", "", "read solo results (reuse_solo) from this journal `file` instead of the one in --out")
	gpus := fs.String("gpus", "", "comma-separated GPU indices or UUIDs to pin the cell to (default: the campaign's first GPU)")
	python := fs.String("python", "", "workload interpreter (overrides workload.python and $"+runner.EnvPython+")")
	telemetry := fs.String("telemetry", "", "auto, nvml, smi, none or fake (default: the campaign's)")
	force := fs.Bool("force", false, "run a pair predicted not to fit in GPU memory")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) > 0 || *campaign == "" || *index == "" {
		fs.Usage()
		return errors.New("profile cell: --campaign and --index are required, and no positional arguments are accepted")
	}
	i, err := strconv.Atoi(strings.TrimSpace(*index))
	if err != nil {
		return fmt.Errorf("profile cell: --index %q: not a number", *index)
	}
	if *indexMap != "" {
		if i, err = mappedIndex(*indexMap, i); err != nil {
			return fmt.Errorf("profile cell: %w", err)
		}
	}
	c, err := loadCampaign(*campaign, *python, *backend, *telemetry)
	if err != nil {
		return err
	}
	if err := c.Resolve(); err != nil {
		return fmt.Errorf("profile cell: %w", err)
	}
	log, err := newLogger(stderr, *logFormat)
	if err != nil {
		return err
	}
	dir, save := *out, *journal
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sharebench-cell-")
		if err != nil {
			return fmt.Errorf("profile cell: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir, save = tmp, false
	}
	var pin []string
	if s := strings.TrimSpace(*gpus); s != "" {
		pin = strings.Split(s, ",")
	}
	sampler, err := gpu.Open(ctx, c.Telemetry)
	if err != nil {
		return fmt.Errorf("profile cell: telemetry: %w", err)
	}
	defer sampler.Close()
	res, err := runner.RunTask(ctx, c, i, newBackend(c), runner.TaskOptions{
		OutDir: dir, Journal: save, SoloJournal: *soloJournal, GPUs: pin, Sampler: sampler, Logger: log, Force: *force,
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
