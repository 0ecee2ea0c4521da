package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/profile"
)

const profileShowAbout = `Print an interference profile as tables: the configurations with their step time
per GPU count, memory (measured or estimate) and repeats, then the ξ matrix of every
sharing mode and GPU count ("n/a" where the profile has no pair). With --plot-dir, also
write the ξ heat maps (xi-<mode>-<g>gpu) and the per-model step-time and memory vs
sub-batch figures (subbatch-<model>).`

// profileShow implements "sharebench profile show".
func profileShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := analysisFlags("profile show", "profile show PROFILE.json [--format text|md|csv|latex] [--plot-dir DIR [--plot-format png|svg|pdf]]", profileShowAbout, stderr)
	format := fs.String("format", "text", "table `format`: text, md, csv or latex")
	plotDir := fs.String("plot-dir", "", "also write the profile's figures into `DIR` (created if needed)")
	plotFormat := fs.String("plot-format", "png", "figure `format` for --plot-dir: png, svg or pdf")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 1 {
		return fmt.Errorf("profile show: want one PROFILE.json, got %d arguments", len(pos))
	}
	f, err := analysis.ParseFormat(*format)
	if err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	pf := strings.ToLower(*plotFormat)
	if pf != "png" && pf != "svg" && pf != "pdf" {
		return fmt.Errorf("profile show: unknown --plot-format %q (known: png, svg, pdf)", *plotFormat)
	}
	t, err := profile.LoadFile(pos[0])
	if err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	var buf bytes.Buffer
	if err := analysis.RenderAll(&buf, f, analysis.ProfileTables(t, filepath.Base(pos[0]))...); err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if *plotDir == "" {
		return nil
	}
	figs, err := analysis.ProfileFigures(t)
	if err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	if err := ensureDir(*plotDir); err != nil {
		return fmt.Errorf("profile show: %w", err)
	}
	for _, nf := range figs {
		path := filepath.Join(*plotDir, nf.Name+"."+pf)
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

// profileDiff implements "sharebench profile diff".
func profileDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := analysisFlags("profile diff", "profile diff A.json B.json [--format text|md|csv|latex]", profileDiffAbout, stderr)
	format := fs.String("format", "text", "table `format`: text, md, csv or latex")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return helpIsSuccess(err)
	}
	if len(pos) != 2 {
		return errors.New("profile diff: want two profiles, A.json and B.json")
	}
	f, err := analysis.ParseFormat(*format)
	if err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	a, err := profile.LoadFile(pos[0])
	if err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	b, err := profile.LoadFile(pos[1])
	if err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	var buf bytes.Buffer
	if err := analysis.RenderAll(&buf, f, analysis.ProfileDiff(a, b, filepath.Base(pos[0]), filepath.Base(pos[1]))...); err != nil {
		return fmt.Errorf("profile diff: %w", err)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}
