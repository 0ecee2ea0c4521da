package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/internal/muripub"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/trace"
)

// muriInterleave are the runs of the Muri simulator's two interleaving schedules that the
// repository holds per-job references of (testdata/muri/README.md), by policy: the lineage's runs
// by trace name, "-plain" those without its two non-scheduling effects. Muri's own Python takes
// from seconds (trace3) to hours (trace2) per run, so the larger traces are compared with the
// published values instead (TestMuriInterleavePublished).
var muriInterleave = map[string]struct {
	schedule string
	runs     []string
}{
	"muri-s": {"multi-resource-blossom-same-gpu", []string{"trace3-plain", "trace3", "trace1"}},
	"muri-l": {"multi-resource-blossom-same-gpu-unaware", []string{"trace3-plain", "trace3", "trace1", "trace1_pr", "trace3_pr"}},
}

// TestMuriInterleave runs muri-s and muri-l on Muri's traces and requires every job's JCT within
// 1 ms of the Muri simulator's, but for the runs of muriApart, whose gaps must be as measured. A
// group that moves to other GPUs is stopped and started again here, which the lineage does not
// count as a preemption: a job may count more preemptions than Muri's, never fewer.
func TestMuriInterleave(t *testing.T) {
	for _, pol := range []string{"muri-s", "muri-l"} {
		mi := muriInterleave[pol]
		for _, run := range mi.runs {
			name, plain := strings.CutSuffix(run, "-plain")
			if testing.Short() && name != "trace3" {
				continue
			}
			t.Run(pol+"/"+run, func(t *testing.T) {
				jobs := readTrace(t, "traces/muri-philly/"+name+".csv")
				ref := "testdata/muri/" + name + "-" + mi.schedule + strings.TrimPrefix(run, name) + ".csv"
				cfg := muriConfig(name, !plain)
				cfg.Shape.MaxShare = 4
				r, want := runMuri(t, builtin.Registry(), pol, cfg, jobs, ref)
				gap, diffs := muriCompareMoves(r, want)
				checkMuriGap(t, pol, run, gap, diffs, len(want))
			})
		}
	}
}

// muriCompareMoves is muriCompare for policies whose groups move: a job differs from Muri's when
// its JCT does by more than 1 ms or it counts fewer preemptions.
func muriCompareMoves(r *Result, want map[trace.JobID]muriJob) (muriGap, []string) {
	fewer := map[trace.JobID]bool{}
	for _, j := range r.Jobs {
		if j.Preempts < want[j.ID].preempts {
			fewer[j.ID] = true
		}
	}
	adj := make(map[trace.JobID]muriJob, len(want))
	for _, j := range r.Jobs {
		w := want[j.ID]
		if !fewer[j.ID] {
			w.preempts = j.Preempts
		}
		adj[j.ID] = w
	}
	var jobs []trace.Job
	for _, j := range r.Jobs {
		jobs = append(jobs, trace.Job{ID: j.ID, Submit: j.Submit})
	}
	return muriCompare(r, jobs, adj)
}

// TestMuriRefuses checks that muri-s and muri-l refuse, with an error naming the cause, what the
// interleaving model cannot run: groups of more than four jobs, and jobs without stage times.
func TestMuriRefuses(t *testing.T) {
	jobs := readTrace(t, "traces/muri-philly/trace3.csv")[:20]
	bare := slices.Clone(jobs)
	bare[3].Stages = nil
	for _, c := range []struct {
		name  string
		share int
		jobs  []trace.Job
		want  string
	}{
		{"max-share 5", 5, jobs, "groups of at most 4 jobs"},
		{"no stage times", 4, bare, "has no stage times"},
	} {
		for _, pol := range []string{"muri-s", "muri-l"} {
			cfg := muriConfig("trace3", true)
			cfg.Shape.MaxShare = c.share
			p, err := builtin.Registry().New(pol)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(context.Background(), cfg, c.jobs, p, nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %s: error %v, want one saying %q", pol, c.name, err, c.want)
			}
		}
	}
}

// TestMuriInterleavePublished measures Muri's own runs (the per-job references, which sharebench
// matches as TestMuriInterleave pins) against the values Muri's artifact publishes for them, and
// requires docs/simulator.md to show the measurement between "<!-- muri-published -->" and
// "<!-- end muri-published -->".
func TestMuriInterleavePublished(t *testing.T) {
	var b strings.Builder
	b.WriteString("| policy | trace | Muri's run against its published value: average JCT | makespan | p99 JCT |\n")
	b.WriteString("|---|---|---:|---:|---:|\n")
	runs := map[string][]string{"themis": muriThemisRuns}
	schedule := map[string]string{"themis": "themis"}
	for pol, mi := range muriInterleave {
		runs[pol], schedule[pol] = mi.runs, mi.schedule
	}
	for _, pol := range []string{"themis", "muri-s", "muri-l"} {
		for k, name := range muriTraces {
			if !slices.Contains(runs[pol], name) {
				continue
			}
			pub := muripub.Values[pol]
			fmt.Fprintf(&b, "| `%s` | %s |", pol, name)
			for m, got := range muriRefSummary(t, name, schedule[pol]) {
				fmt.Fprintf(&b, " %+.2f%% |", 100*(got/pub[m][k]-1))
			}
			b.WriteString("\n")
		}
	}
	checkSimulatorDoc(t, "muri-published", "show Muri's runs against the published values as measured", b.String())
}
