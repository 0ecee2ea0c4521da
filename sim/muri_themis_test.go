package sim

import (
	"strings"
	"testing"

	"github.com/sharebench/sharebench/policy/builtin"
)

// muriThemisRuns are the references of Muri's themis (testdata/muri/README.md), with the lineage's
// effects: "<trace>" is Muri's own run with cvxpy and ECOS (minutes to half an hour of
// Python per trace), "<trace>-centre" Muri's code around sharebench's solver (centre_cvxpy.py).
var muriThemisRuns = []string{"trace1", "trace3", "trace3_pr",
	"trace1-centre", "trace1_pr-centre", "trace2-centre", "trace2_pr-centre", "trace3-centre", "trace3_pr-centre", "trace4-centre", "trace4_pr-centre"}

// TestMuriThemis runs themis on Muri's traces and requires the gap to each reference to be as
// measured (muriApart). Against Muri's code around the same solver, the runs part ways only by
// floating-point rounding; against Muri's own runs, by the solver's choice among equal optima
// (the analytic centre here, wherever ECOS stops there).
func TestMuriThemis(t *testing.T) {
	for _, run := range muriThemisRuns {
		name, _ := strings.CutSuffix(run, "-centre")
		if testing.Short() && name != "trace3" || raceOn && strings.HasPrefix(name, "trace2") {
			continue // trace2's runs are most of the test's time, and check what the others check
		}
		t.Run(run, func(t *testing.T) {
			jobs := readTrace(t, "traces/muri-philly/"+name+".csv")
			ref := "testdata/muri/" + name + "-themis" + strings.TrimPrefix(run, name) + ".csv"
			r, want := runMuri(t, builtin.Registry(), "themis", muriConfig(name, true), jobs, ref)
			gap, diffs := muriCompare(r, jobs, want)
			checkMuriGap(t, "themis", run, gap, diffs, len(want))
		})
	}
}
