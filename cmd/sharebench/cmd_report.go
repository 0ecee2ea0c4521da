package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/bench"
)

const reportLong = `Render the numbers of a reproduction's answer from its run directories: one sentence per
claim with the conditions under which it holds, the tally of the claims rows (each simulation
once, sensitivity rows apart) and every row with its direction and magnitude, where the gain
comes from (order or sharing, by job size and model), the metrics beyond average JCT, the
sub-batch mechanism, the interference under which the paper's magnitudes appear, and each
experiment's average JCT and Δ against its baselines (docs/analysis.md). Without --update it prints every part as one
Markdown document. With --update it rewrites, in each FILE, the regions marked
<!-- generated:NAME --> ... <!-- end:NAME --> with the part of that name, so that the numbers
REPRODUCE.md and the docs cite always come from the results ("make reproduce" does this; a test
fails when they drift). --check only reports the files whose regions are stale.`

// reportOpts are the flags of "sharebench report".
type reportOpts struct {
	label, spec   string
	update, check []string
	as            string
}

func newReportCmd() *cobra.Command {
	var o reportOpts
	cmd := &cobra.Command{
		Use:   "report DIR [--label paper | --spec SPEC.yaml] [--update FILE... | --check FILE...]",
		Short: "render a reproduction's answer (claims, verdicts, results) from its run directories",
		Long:  reportLong,
		Example: "  sharebench report results/paper\n" +
			"  sharebench report results/paper --update REPRODUCE.md --update docs/simulator.md",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.label, "label", bench.LabelPaper, "the shipped experiments DIR holds: paper or smoke")
	fs.StringVar(&o.spec, "spec", "", "the experiment spec `file` DIR holds (a sweep's output), instead of --label")
	fs.StringArrayVar(&o.update, "update", nil, "rewrite the generated regions of this Markdown `file` (repeatable)")
	fs.StringVar(&o.as, "as", "", "write the regions named `NAME`/PART (a document citing several reproductions), not the plain ones")
	fs.StringArrayVar(&o.check, "check", nil, "fail if the generated regions of this Markdown `file` are stale (repeatable)")
	completeLabels(cmd)
	completeFiles(cmd, []string{"md"}, "update", "check")
	completeFiles(cmd, []string{"yaml", "yml"}, "spec")
	return cmd
}

func (o *reportOpts) run(dir string, stdout io.Writer) error {
	exps := bench.Experiments(o.label)
	if o.spec != "" {
		e, err := bench.LoadSpecFile(o.spec)
		if err != nil {
			return err
		}
		exps = []bench.Experiment{e}
	}
	if len(exps) == 0 {
		return usagef("report: unknown label %q (known: %s)", o.label, strings.Join(bench.Labels(), ", "))
	}
	plan, err := bench.PlanOf(exps)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	rep, err := bench.BuildReport(dir, plan, exps)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if len(rep.Names) == 0 {
		return fmt.Errorf("report: %s holds no run of the %d planned", dir, len(plan))
	}
	if strings.Contains(o.as, "/") {
		return usagef("report: --as %q: a name without '/'", o.as)
	}
	rep.Prefix = o.as
	if len(o.update) == 0 && len(o.check) == 0 {
		_, err := io.WriteString(stdout, rep.Full())
		return err
	}
	var stale []string
	for _, files := range [][]string{o.update, o.check} {
		for _, f := range files {
			old, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			text, err := rep.Render(string(old), f)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			if text == string(old) {
				continue
			}
			if slices.Contains(o.check, f) {
				stale = append(stale, f)
				continue
			}
			if err := analysis.WriteFileAtomic(f, []byte(text)); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(stdout, "updated %s\n", f)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("report: the generated regions of %s are stale: run sharebench report %s --update %s", strings.Join(stale, ", "), dir, strings.Join(stale, " --update "))
	}
	return nil
}
