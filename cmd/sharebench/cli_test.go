package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/internal/golden"
)

// execCLI runs the command line as main does and returns its exit status, stdout and stderr.
func execCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpGolden pins the help of the root and of a few commands, and that "help CMD",
// "CMD --help" and "CMD -h" print the same text on stdout with exit status 0.
func TestHelpGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"help-root.txt", []string{"--help"}},
		{"help-simulate.txt", []string{"simulate", "--help"}},
		{"help-trace-gen.txt", []string{"trace", "gen", "--help"}},
		{"help-profile.txt", []string{"profile", "--help"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := execCLI(tc.args...)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden.Check(t, filepath.Join("testdata", tc.golden), []byte(out))
			cmdArgs := tc.args[:len(tc.args)-1]
			for _, alt := range [][]string{append([]string{"help"}, cmdArgs...), append(append([]string{}, cmdArgs...), "-h")} {
				if code, got, _ := execCLI(alt...); code != 0 || got != out {
					t.Errorf("%v: exit %d, output differs from %v", alt, code, tc.args)
				}
			}
		})
	}
}

// TestEveryCommandHasHelp walks the command tree: "help PATH" and "PATH --help" succeed for
// every command and show its path; usage lines spell flags with two dashes.
func TestEveryCommandHasHelp(t *testing.T) {
	var paths [][]string
	walk(newRootCmd(), func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		var p []string
		for x := c; x.HasParent(); x = x.Parent() {
			p = append([]string{x.Name()}, p...)
		}
		paths = append(paths, p)
	})
	if len(paths) < 20 {
		t.Fatalf("only %d commands", len(paths))
	}
	singleDash := regexp.MustCompile(`(^|[\s\[|(])-[a-z][a-z-]+`)
	for _, p := range paths {
		for _, args := range [][]string{append(append([]string{}, p...), "--help"), append([]string{"help"}, p...)} {
			code, out, errOut := execCLI(args...)
			if code != 0 || errOut != "" || !strings.Contains(out, "sharebench "+strings.Join(p, " ")) && len(p) > 0 {
				t.Errorf("%v: exit %d, stderr %q, output:\n%s", args, code, errOut, out)
			}
			usage, _, _ := strings.Cut(out, "\nFlags:")
			if m := singleDash.FindString(usage); m != "" && !strings.Contains(usage, "train.py") {
				t.Errorf("%v: single-dash flag %q in the usage", args, m)
			}
		}
	}
}

// TestUsageErrorsOneLine pins that flag, argument and command errors are one line on stderr,
// with nothing on stdout and exit status 1.
func TestUsageErrorsOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--foo"}, "Error: unknown flag --foo; see 'sharebench simulate --help'"},
		{[]string{"simulate", "-trace", "x"}, "Error: unknown flag -trace (long flags take two dashes: --trace); see 'sharebench simulate --help'"},
		{[]string{"simulate", "--trace"}, "Error: flag --trace needs a value; see 'sharebench simulate --help'"},
		{[]string{"simulate", "--seed", "x"}, `Error: invalid value "x" for --seed (uint64): invalid syntax; see 'sharebench simulate --help'`},
		{[]string{"simulate", "--trace", "t.csv"}, "Error: required flags --out, --policy not set; see 'sharebench simulate --help'"},
		{[]string{"simulate", "extra"}, `Error: unexpected argument "extra"; see 'sharebench simulate --help'`},
		{[]string{"trace", "gen", "--jobs", "0", "--load", "1", "--cluster", "1x1", "--out", "-"}, "Error: trace gen: --jobs 0: want a number of jobs in [1, 10000000]; see 'sharebench trace gen --help'"},
		{[]string{"profile", "frob"}, `Error: unknown command "frob" for "sharebench profile"; see 'sharebench profile --help'`},
		{[]string{"profile", "shwo"}, `Error: unknown command "shwo" for "sharebench profile" (did you mean show?); see 'sharebench profile --help'`},
		{[]string{"profile", "show"}, "Error: want one PROFILE.json, got 0 arguments; see 'sharebench profile show --help'"},
		{[]string{"profile", "run"}, "Error: required flag --spec not set; see 'sharebench profile run --help'"},
		{[]string{"table", "--kind", "nope", "x"}, "Error: table: unknown --kind \"nope\" (known: summary, claims, jobs); see 'sharebench table --help'"},
		{[]string{"help", "nope"}, `Error: unknown help topic "nope"; see 'sharebench --help'`},
		{[]string{"--foo"}, "Error: unknown flag --foo; see 'sharebench --help'"},
	} {
		code, out, errOut := execCLI(tc.args...)
		if code != 1 || out != "" || errOut != tc.want+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestRuntimeErrorOneLine: a runtime error is one line, with no usage text after it.
func TestRuntimeErrorOneLine(t *testing.T) {
	code, out, errOut := execCLI("simulate", "--trace", filepath.Join(t.TempDir(), "missing.csv"), "--cluster", "1x4",
		"--policy", "fifo", "--out", filepath.Join(t.TempDir(), "run"))
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "Error: ") || strings.Contains(errOut, "Usage") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := oneLine("a\n  b\n\nc\n"); got != "a; b; c" {
		t.Errorf("oneLine = %q", got)
	}
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}}},
			true, "sharebench (devel) vcs.revision=0123456789abcdef0123456789abcdef01234567 vcs.modified=true go1.26.0"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, true, "sharebench v1.2.3 go1.26.0"},
	} {
		if got := versionLine(tc.info, tc.ok); got != tc.want {
			t.Errorf("versionLine = %q, want %q", got, tc.want)
		}
	}
	code, out, _ := execCLI("--version")
	shape := regexp.MustCompile(`^sharebench (\(devel\)|\(unknown\)|v\S+)( vcs\.revision=[0-9a-f]+)?( vcs\.modified=(true|false))? go\S+\n$`)
	if code != 0 || !shape.MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestCompletion checks what shell completion offers for a few flags, the shipped labels among
// them (read when completing, not when the command tree is built).
func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"reproduce", "--label", ""}, []string{"paper", "smoke"}},
		{[]string{"report", "--label", ""}, []string{"paper", "smoke"}},
		{[]string{"compare", "--label", ""}, []string{"paper", "smoke"}},
		{[]string{"reproduce", "--backend", ""}, []string{"local", "slurm"}},
	} {
		code, out, _ := execCLI(append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		// Completions, one per line, then ":directive".
		got := strings.Split(strings.TrimSpace(out), "\n")
		if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], ":") {
			t.Fatalf("%v: output %q has no directive", tc.args, out)
		}
		if got = got[:len(got)-1]; !slices.Equal(got, tc.want) {
			t.Errorf("%v: completions %q, want %q", tc.args, got, tc.want)
		}
	}
}
