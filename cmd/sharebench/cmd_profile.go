package main

import (
	"context"
	"fmt"
	"io"
)

// cmdProfile dispatches "sharebench profile <verb>".
func cmdProfile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verbs := []command{
		{"run", "run a profiling campaign (solo and pair cells) and write profile.json", profileRun},
		{"show", "print a profile as tables, or plot it", profileShow},
		{"diff", "compare two profiles (two GPUs, or two runs)", profileDiff},
		{"import", "import public measurements (gavel, blox, pollux, authors) into a profile", profileImport},
		{"status", "show the cells of a campaign directory: done, running, failed", profileStatus},
		{"cell", "run one cell of a campaign (used by Slurm and Kubernetes tasks)", profileCell},
		{"selftest", "check the workload protocol and one short real run on this host", profileSelftest},
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, "usage: sharebench profile <verb> [flags]")
		fmt.Fprintln(stdout)
		for _, v := range verbs {
			fmt.Fprintf(stdout, "  %-9s %s\n", v.name, v.brief)
		}
		if len(args) == 0 {
			return fmt.Errorf("profile: no verb given")
		}
		return nil
	}
	for _, v := range verbs {
		if v.name == args[0] {
			return v.run(ctx, args[1:], stdout, stderr)
		}
	}
	return fmt.Errorf("profile: unknown verb %q", args[0])
}
