package sim

import (
	"testing"

	"github.com/sharebench/sharebench/policy/builtin"
)

// muriThemisRuns are the traces with a reference of Muri's themis, which needs cvxpy with ECOS
// (testdata/muri/README.md): Muri's Python takes minutes per trace.
var muriThemisRuns = []string{"trace3"}

// TestMuriThemis runs themis on Muri's traces with the lineage's effects and requires the gap to
// the Muri simulator's own runs to be as measured (muriApart): the choice among equal optima is
// the analytic centre here and wherever ECOS stops in Muri, so runs part ways where it matters.
func TestMuriThemis(t *testing.T) {
	for _, name := range muriThemisRuns {
		t.Run(name, func(t *testing.T) {
			jobs := readTrace(t, "traces/muri-philly/"+name+".csv")
			r, want := runMuri(t, builtin.Registry(), "themis", muriConfig(name, true), jobs, "testdata/muri/"+name+"-themis.csv")
			gap, diffs := muriCompare(r, jobs, want)
			checkMuriGap(t, "themis", name, gap, diffs, len(want))
		})
	}
}
