package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/profile"
)

const profileShowAbout = `Print an interference profile as tables: the configurations with their step time
per GPU count, memory (measured or estimate) and repeats, then the ξ matrix of every
sharing mode and GPU count ("n/a" where the profile has no pair). With --plot-dir, also
write the ξ heat maps (xi-<mode>-<g>gpu) and the per-model step-time and memory vs
sub-batch figures (subbatch-<model>).`

// profileShowOpts are the flags of "sharebench profile show".
type profileShowOpts struct {
	format, plotDir, plotFormat string
}

func newProfileShowCmd() *cobra.Command {
	var o profileShowOpts
	cmd := &cobra.Command{
		Use:     "show PROFILE.json [--format text|md|csv|latex] [--plot-dir DIR [--plot-format png|svg|pdf]]",
		Short:   "print a profile as tables, or plot it",
		Long:    profileShowAbout,
		Example: "  sharebench profile show results/profiles/gavel-v100.json --format md",
		Args:    exactArgs(1, "one PROFILE.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "table `format`: text, md, csv or latex")
	f.StringVar(&o.plotDir, "plot-dir", "", "also write the profile's figures into `DIR` (created if needed)")
	f.StringVar(&o.plotFormat, "plot-format", "png", "figure `format` for --plot-dir: png, svg or pdf")
	completeValues(cmd, "format", "text", "md", "csv", "latex")
	completeValues(cmd, "plot-format", "png", "svg", "pdf")
	completeDirs(cmd, "plot-dir")
	return cmd
}

// run implements "sharebench profile show".
func (o *profileShowOpts) run(path string, stdout, stderr io.Writer) error {
	f, err := analysis.ParseFormat(o.format)
	if err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	pf := strings.ToLower(o.plotFormat)
	if pf != "png" && pf != "svg" && pf != "pdf" {
		return usagef("profile show: unknown --plot-format %q (known: png, svg, pdf)", o.plotFormat)
	}
	t, err := profile.LoadFile(path)
	if err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	var buf bytes.Buffer
	if err := analysis.RenderAll(&buf, f, analysis.ProfileTables(t, filepath.Base(path))...); err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.plotDir == "" {
		return nil
	}
	figs, err := analysis.ProfileFigures(t)
	if err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	if err := ensureDir(o.plotDir); err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	for _, nf := range figs {
		path := filepath.Join(o.plotDir, nf.Name+"."+pf)
		if err := nf.Figure.Save(path); err != nil {
			return fmt.Errorf("profile show: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
	}
	return nil
}

const profileDiffAbout = `Compare two profiles (two GPUs, or two measurement runs): the step time of every
common configuration and GPU count with the ratio B/A, ξ of every common pair with the
difference B − A, and the configurations and pairs present in only one of them.`

func newProfileDiffCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "diff A.json B.json [--format text|md|csv|latex]",
		Short:   "compare two profiles (two GPUs, or two runs)",
		Long:    profileDiffAbout,
		Example: "  sharebench profile diff results/profiles/gavel-p100.json results/profiles/gavel-v100.json",
		Args:    exactArgs(2, "two profiles, A.json and B.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return profileDiff(args[0], args[1], format, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "table `format`: text, md, csv or latex")
	completeValues(cmd, "format", "text", "md", "csv", "latex")
	return cmd
}

// profileDiff implements "sharebench profile diff".
func profileDiff(pathA, pathB, format string, stdout io.Writer) error {
	f, err := analysis.ParseFormat(format)
	if err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	a, err := profile.LoadFile(pathA)
	if err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	b, err := profile.LoadFile(pathB)
	if err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	var buf bytes.Buffer
	if err := analysis.RenderAll(&buf, f, analysis.ProfileDiff(a, b, filepath.Base(pathA), filepath.Base(pathB))...); err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}
