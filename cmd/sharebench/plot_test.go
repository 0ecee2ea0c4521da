package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// plotRuns are the synthetic run directories of the analysis tests.
var plotRuns = filepath.Join("..", "..", "analysis", "testdata", "runs")

func TestPlotFlags(t *testing.T) {
	e1 := filepath.Join(plotRuns, "E1")
	// --format with --out - writes the figure to standard output; --width and --height set
	// the canvas (SVG sizes are in points: 8.5 cm = 240.94 pt, 6 cm = 170.08 pt).
	out, _, err := cli(t, "plot", e1, "--kind", "avg-jct", "--format", "svg", "--out", "-", "--width", "8.5cm", "--height", "60mm", "--font-size", "7")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "<?xml") || !regexp.MustCompile(`width="240\.9\d*pt" height="170\.0\d*pt"`).MatchString(out) {
		t.Errorf("svg header: %.300s", out)
	}
	again, _, _ := cli(t, "plot", e1, "--kind", "avg-jct", "--format", "svg", "--out", "-", "--width", "8.5cm", "--height", "60mm", "--font-size", "7")
	if again != out {
		t.Error("two renderings differ")
	}
	// --log-y forces a log axis, --log-y=false a linear one; the default is chosen from the data.
	logY, _, err := cli(t, "plot", e1, "--kind", "avg-jct", "--format", "svg", "--out", "-", "--log-y")
	if err != nil || !strings.Contains(logY, "log scale") {
		t.Errorf("--log-y: %v, log scale in the figure: %v", err, strings.Contains(logY, "log scale"))
	}
	linX, _, err := cli(t, "plot", filepath.Join(plotRuns, "E1", "trace1"), "--kind", "jct-cdf", "--format", "svg", "--out", "-", "--log-x=false")
	if err != nil || strings.Contains(linX, "log scale") {
		t.Errorf("--log-x=false: %v, log scale in the figure: %v", err, strings.Contains(linX, "log scale"))
	}
	// The format follows the extension of --out; the file is written.
	path := filepath.Join(t.TempDir(), "bars.png")
	if _, _, err := cli(t, "plot", e1, "--kind", "avg-jct", "--out", path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG: %v", path, err)
	}
}

func TestPlotFlagErrors(t *testing.T) {
	e1 := filepath.Join(plotRuns, "E1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "avg-jct", "--out", "x.gif"}, `unknown extension ".gif"`},
		{[]string{"--kind", "avg-jct", "--out", "-"}, "--out - needs --format"},
		{[]string{"--kind", "avg-jct", "--out", "x.svg", "--format", "png"}, "--format png does not match --out x.svg"},
		{[]string{"--kind", "avg-jct", "--out", "-", "--format", "gif"}, `unknown --format "gif"`},
		{[]string{"--kind", "jct-cdf", "--out", "x.svg", "--log-y"}, "--log-y applies to avg-jct and curve"},
		{[]string{"--kind", "util", "--out", "x.svg", "--log-x"}, "--log-x applies to jct-cdf, queue-cdf and curve"},
		{[]string{"--kind", "avg-jct", "--out", "x.svg", "--width", "0"}, "--width: want a positive length"},
		{[]string{"--kind", "avg-jct", "--out", "x.svg", "--height", "3ft"}, "--height: want a positive length"},
		{[]string{"--kind", "avg-jct", "--out", "x.svg", "--width", "1mm"}, "outside 2–200 cm"},
		{[]string{"--kind", "avg-jct", "--out", "x.svg", "--font-size", "99"}, "--font-size 99: want 4–40 points"},
	} {
		_, _, err := cli(t, append([]string{"plot", e1}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestParseLength(t *testing.T) {
	for in, want := range map[string]float64{"16cm": 16, "160mm": 16, "2in": 5.08, "72pt": 2.54, "8.5": 8.5, " 10 CM ": 10} {
		l, err := parseLength(in)
		if got := float64(l) / (72 / 2.54); err != nil || got < want-1e-9 || got > want+1e-9 {
			t.Errorf("parseLength(%q) = %v cm, %v; want %v cm", in, got, err, want)
		}
	}
}
