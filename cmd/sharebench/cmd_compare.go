package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/bench"
)

// newCompareCmd is "sharebench compare": the claims of several reproductions side by side.
func newCompareCmd() *cobra.Command {
	var label, format string
	cmd := &cobra.Command{
		Use:   "compare DIR DIR... [--format md|csv|latex|text]",
		Short: "put the paper's claims under several reproductions side by side",
		Long: `Compare reproductions of the paper's experiments, e.g. the shipped one (results/paper, the
Gavel profile) and one rerun with a measured profile (sharebench reproduce --profile P --label
L, in results/L): for every claims row, each reproduction's Δ average JCT, CI, draws, direction
and magnitude, computed from its own run directories.`,
		Example: "  sharebench compare results/paper results/h200",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			f, err := analysis.ParseFormat(format)
			if err != nil {
				return usagef("compare: --format: %v", err)
			}
			exps := bench.Experiments(label)
			plan, err := bench.PlanOf(exps)
			if err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			var names []string
			var tables []analysis.Table
			for _, d := range dirs {
				runs, err := bench.ClaimRuns(d, plan, exps)
				if err != nil {
					return fmt.Errorf("compare: %w", err)
				}
				if len(runs) == 0 {
					return fmt.Errorf("compare: %s holds no run of the %s experiments that check the claims", d, label)
				}
				t, err := analysis.Claims(runs)
				if err != nil {
					return fmt.Errorf("compare: %s: %w", d, err)
				}
				names = append(names, filepath.Base(filepath.Clean(d)))
				tables = append(tables, t)
			}
			t := analysis.CompareClaims(names, tables)
			return t.Render(cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&label, "label", bench.LabelPaper, "the shipped experiments the directories hold: paper or smoke")
	cmd.Flags().StringVar(&format, "format", "md", "output format: md, csv, latex or text")
	completeLabels(cmd)
	completeValues(cmd, "format", "md", "csv", "latex", "text")
	return cmd
}
