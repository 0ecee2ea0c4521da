package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/runner"
)

func newInternalCmd() *cobra.Command {
	fake := &cobra.Command{
		Use:   "fake-workload [train.py flags]",
		Short: "the fake workload of the fake backend (workload protocol v1 on stdout and stdin)",
		Long: "The fake workload used by the fake backend and inside test containers: it accepts the flags of\n" +
			"workloads/train.py (--model, --batch, --sub-batch, --max-steps, --seed, --inject, ...) and\n" +
			"speaks the workload protocol v1 (docs/runner.md) with seeded step times. Its exit status is part\n" +
			"of the protocol (3 = out of memory).",
		DisableFlagParsing:    true, // the flags are train.py's, parsed by the fake itself
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
				return cmd.Help()
			}
			if code := runner.FakeWorkload(args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), os.Getenv); code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	}
	return newGroup("internal", "helpers used by tests and cluster tasks (fake-workload, ...)",
		"Helpers that sharebench runs itself: in tests, in containers and in cluster tasks.", fake)
}
