package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceGenHitsItsLoad requires "trace gen" to reach the offered load it was asked for (it
// once produced 1.86 for --load 1.2) and to say which load it reached.
func TestTraceGenHitsItsLoad(t *testing.T) {
	philly := filepath.Join("..", "..", "data", "traces", "pollux-philly-jobs", "philly.csv")
	for _, load := range []float64{0.5, 1.2, 3} {
		out := filepath.Join(t.TempDir(), "g.csv")
		stdout, stderr, err := cli(t, "trace", "gen", "--jobs", "500", "--load", fmt.Sprint(load), "--cluster", "8x8",
			"--seed", "7", "--philly", philly, "--out", out)
		if err != nil {
			t.Fatalf("load %v: %v\n%s", load, err, stderr)
		}
		var got float64
		for _, line := range strings.Split(stdout, "\n") {
			if rest, ok := strings.CutPrefix(line, "offered load "); ok {
				fmt.Sscanf(rest, "%g", &got)
			}
		}
		if got < load*0.98 || got > load*1.02 {
			t.Errorf("--load %v gave offered load %v:\n%s", load, got, stdout)
		}
	}
}
