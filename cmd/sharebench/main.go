// Command sharebench profiles GPU-sharing interference, simulates schedulers on job traces and
// reproduces the SJF-BSBF paper's experiments. Run "sharebench help" for the subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, errUsageShown) {
		fmt.Fprintf(os.Stderr, "sharebench: %v\n", err)
	}
	if err != nil {
		os.Exit(1)
	}
}

// command is one subcommand of the CLI.
type command struct {
	name  string
	brief string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands in the order "sharebench help" prints them.
func commands() []command {
	return []command{
		{"simulate", "replay a job trace on a simulated cluster under one policy", cmdSimulate},
		{"policies", "list the scheduling policies and their aliases", cmdPolicies},
		{"trace", "convert, validate or generate job traces", cmdTrace},
		{"profile", "measure, import, show and compare interference profiles", cmdProfile},
		{"reproduce", "run the paper's experiments and write tables and figures", cmdReproduce},
		{"table", "tabulate simulation run directories (md, csv, latex)", cmdTable},
		{"plot", "plot simulation run directories (png, svg, pdf)", cmdPlot},
		{"internal", "helpers used by tests and cluster tasks (fake-workload, ...)", cmdInternal},
	}
}

// errUsageShown marks an error whose message was already printed with the usage text.
var errUsageShown = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return fmt.Errorf("no subcommand given")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	return fmt.Errorf("unknown subcommand %q (run \"sharebench help\")", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sharebench <subcommand> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.brief)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run \"sharebench <subcommand> -h\" for its flags.")
}
