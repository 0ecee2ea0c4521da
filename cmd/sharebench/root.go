package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sharebench/sharebench/bench"
)

// execute runs the command line and returns the exit status. An error is printed as one line
// on stderr; a usage error (flags, arguments) ends with where to read the command's help.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdout, stderr)
	var status exitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	}
	fmt.Fprintf(stderr, "Error: %s\n", oneLine(err.Error()))
	return 1
}

// run builds the command tree and executes args with it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	if m := requiredFlagsRE().FindStringSubmatch(err.Error()); m != nil {
		// cobra's own check of MarkFlagRequired: `required flag(s) "a", "b" not set`.
		names := strings.Split(m[1], `", "`)
		for i, n := range names {
			names[i] = "--" + n
		}
		noun := "flag"
		if len(names) > 1 {
			noun = "flags"
		}
		err = &usageError{err: fmt.Errorf("required %s %s not set", noun, strings.Join(names, ", "))}
	}
	var ue *usageError
	if errors.As(err, &ue) && ue.path == "" && cmd != nil {
		ue.path = cmd.CommandPath()
	}
	return err
}

// requiredFlagsRE compiles on first use, an error: not at every start of sharebench.
var requiredFlagsRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^required flag\(s\) "(.*)" not set$`)
})

// exitStatus is an error that only sets the exit status; nothing is printed.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// usageError is an error in the command line: a flag, an argument or a command name.
type usageError struct {
	err  error
	path string // the command whose help to read, e.g. "sharebench simulate"
}

func (e *usageError) Error() string {
	if e.path == "" {
		return e.err.Error()
	}
	return fmt.Sprintf("%v; see '%s --help'", e.err, e.path)
}

func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, a ...any) error { return &usageError{err: fmt.Errorf(format, a...)} }

// oneLine joins the lines of a message with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

const rootLong = `sharebench measures how deep-learning jobs slow each other down when they share a GPU
(interference profiles), simulates cluster schedulers on job traces with those profiles, and
reproduces the experiments of the SJF-BSBF paper ("Scheduling Deep Learning Jobs in
Multi-Tenant GPU Clusters via Wise Resource Sharing", IWQoS 2024) as tables and figures.

The documentation is in README.md, REPRODUCE.md and docs/ of the repository.`

// newRootCmd returns the command tree of sharebench.
func newRootCmd() *cobra.Command {
	cobra.EnableCommandSorting = false // list the commands in the order they are added
	root := &cobra.Command{
		Use:           "sharebench",
		Short:         "GPU-sharing interference profiles, scheduler simulation and the SJF-BSBF reproduction",
		Long:          rootLong,
		Version:       versionLine(debug.ReadBuildInfo()),
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRun,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err: flagError(c, err)}
	})
	root.AddCommand(
		newSimulateCmd(),
		newReplayCmd(),
		newFidelityCmd(),
		newPoliciesCmd(),
		newTraceCmd(),
		newProfileCmd(),
		newReproduceCmd(),
		newSweepCmd(),
		newReportCmd(),
		newCompareCmd(),
		newTableCmd(),
		newPlotCmd(),
		newInternalCmd(),
	)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short = "help about any command"
			c.Run, c.RunE, c.Args = nil, helpRun, cobra.ArbitraryArgs
		case "completion":
			c.Short = "generate the shell completion script for bash, zsh, fish or powershell"
			c.Args, c.RunE = cobra.ArbitraryArgs, groupRun
		}
	}
	// A command that groups others shows "sharebench trace [command]", not "[flags]".
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	walk(root, func(c *cobra.Command) {
		if check := c.Args; check != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := check(cmd, args); err != nil {
					var ue *usageError
					if !errors.As(err, &ue) {
						err = &usageError{err: err}
					}
					return err
				}
				return nil
			}
		}
	})
	return root
}

// walk calls f on c and every command below it.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

// helpRun is "sharebench help [command...]".
func helpRun(c *cobra.Command, args []string) error {
	cmd, rest, err := c.Root().Find(args)
	if err != nil || len(rest) > 0 {
		return &usageError{err: fmt.Errorf("unknown help topic %q", strings.Join(args, " ")), path: c.Root().Name()}
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	return cmd.Help()
}

// groupRun runs a command that only groups others: without arguments it prints its help and
// fails; with one, that argument is an unknown command.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		if err := cmd.Help(); err != nil {
			return err
		}
		return exitStatus(1)
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return usagef("%s", msg)
}

// newGroup returns a command that groups the given subcommands.
func newGroup(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.ArbitraryArgs, RunE: groupRun}
	c.AddCommand(subs...)
	return c
}

// flagError rewrites pflag's parse errors as one short line that spells flags with two dashes.
func flagError(c *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var noValue *pflag.ValueRequiredError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &notExist):
		group := notExist.GetSpecifiedShortnames()
		if group == "" {
			return fmt.Errorf("unknown flag --%s", notExist.GetSpecifiedName())
		}
		name, _, _ := strings.Cut(group, "=")
		if c.Flags().Lookup(name) != nil {
			return fmt.Errorf("unknown flag -%s (long flags take two dashes: --%s)", name, name)
		}
		return fmt.Errorf("unknown flag -%s", group)
	case errors.As(err, &noValue):
		if f := noValue.GetFlag(); f != nil {
			return fmt.Errorf("flag --%s needs a value", f.Name)
		}
		return fmt.Errorf("flag --%s needs a value", noValue.GetSpecifiedName())
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		cause := invalid.Unwrap()
		var num *strconv.NumError
		if errors.As(cause, &num) {
			cause = num.Err
		}
		return fmt.Errorf("invalid value %q for --%s (%s): %v", invalid.GetValue(), f.Name, f.Value.Type(), cause)
	}
	return err
}

// versionLine is what --version prints: the module version (a tag when installed with go
// install, "(devel)" when built from a checkout), the VCS revision and whether the tree had
// local changes (recorded by go build in a checkout), and the Go version.
func versionLine(info *debug.BuildInfo, ok bool) string {
	v, goVersion := "(unknown)", runtime.Version()
	parts := []string{"sharebench"}
	if ok {
		if info.Main.Version != "" {
			v = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
	}
	parts = append(parts, v)
	if ok {
		for _, key := range []string{"vcs.revision", "vcs.modified"} {
			for _, s := range info.Settings {
				if s.Key == key && s.Value != "" {
					parts = append(parts, key+"="+s.Value)
				}
			}
		}
	}
	return strings.Join(append(parts, goVersion), " ")
}

// noArgs accepts no positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// completeValues offers the fixed values of a flag to shell completion.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	if err := cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(err) // a flag name that does not exist: a programming error
	}
}

// completeLabels makes shell completion offer the shipped experiments' labels for --label. They
// are read when completing, not at every start: reading them parses every shipped spec.
func completeLabels(cmd *cobra.Command) {
	labels := func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return bench.Labels(), cobra.ShellCompDirectiveNoFileComp
	}
	if err := cmd.RegisterFlagCompletionFunc("label", labels); err != nil {
		panic(err)
	}
}

// completeFiles makes shell completion offer files (with one of the extensions, if given) for
// the flags.
func completeFiles(cmd *cobra.Command, exts []string, flags ...string) {
	for _, f := range flags {
		if err := cmd.MarkFlagFilename(f, exts...); err != nil {
			panic(err)
		}
	}
}

// completeDirs makes shell completion offer directories for the flags.
func completeDirs(cmd *cobra.Command, flags ...string) {
	for _, f := range flags {
		if err := cmd.MarkFlagDirname(f); err != nil {
			panic(err)
		}
	}
}

// required marks flags as required: cobra checks them before the command runs.
func required(cmd *cobra.Command, flags ...string) {
	for _, f := range flags {
		if err := cmd.MarkFlagRequired(f); err != nil {
			panic(err)
		}
	}
}

// exactArgs accepts exactly n positional arguments, described by what in the error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d arguments", what, len(args))
		}
		return nil
	}
}
