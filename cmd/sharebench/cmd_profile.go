package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newProfileCmd() *cobra.Command {
	return newGroup("profile", "measure, import, show and compare interference profiles",
		"Measure interference profiles on GPUs (plan, run, cell, status, selftest), import them from public\n"+
			"measurements (import), and print or compare them (show, diff). docs/runner.md is the guide;\n"+
			"docs/profile-format.md describes profile.json.",
		newProfileRunCmd(),
		newProfilePlanCmd(),
		newProfileShowCmd(),
		newProfileDiffCmd(),
		newProfileImportCmd(),
		newProfileStatusCmd(),
		newProfileCellCmd(),
		newProfileSelftestCmd(),
	)
}

// commandLine returns the command line as parsed, for provenance records: the command's path,
// the flags that were set (in name order, --name=value) and the positional arguments.
func commandLine(cmd *cobra.Command, args []string) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" && f.Value.String() == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
		parts = append(parts, "--"+f.Name+"="+shellQuote(f.Value.String()))
	})
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
