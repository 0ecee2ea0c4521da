package analysis

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/results"
)

func TestGroupRuns(t *testing.T) {
	t.Parallel()
	noLabel := testRun("", "", "fifo", 1, 10) // trace from the file name
	variant := testRun("E5", "t", "sjf-bsbf", 1, 10)
	variant.Summary.Labels[results.LabelVariant] = "share-always"
	runs := []*results.Run{
		testRun("E1", "trace10", "sjf-bsbf", 2, 10),
		testRun("E1", "trace10", "sjf-bsbf", 1, 10),
		testRun("E1", "trace2", "tiresias", 1, 10),
		testRun("E1", "trace2", "my-policy", 1, 10),
		testRun("E1", "trace2", "fifo", 1, 10),
		noLabel, variant,
	}
	groups, err := GroupRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		var seeds []string
		for _, s := range g.Seeds() {
			seeds = append(seeds, string(rune('0'+s)))
		}
		got = append(got, g.Experiment+"|"+g.Trace+"|"+g.Series+"|"+strings.Join(seeds, ","))
	}
	want := []string{
		"|file.csv|fifo|1",
		"E1|trace2|fifo|1", "E1|trace2|tiresias|1", "E1|trace2|my-policy|1", // fixed order, then the others
		"E1|trace10|sjf-bsbf|1,2", // natural order: trace2 before trace10; seeds sorted
		"E5|t|share-always|1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

func TestGroupRunsSameSeedIsAnError(t *testing.T) {
	t.Parallel()
	a := testRun("E1", "t", "fifo", 1, 10)
	b := testRun("E1", "t", "fifo", 1, 11)
	b.Dir = "elsewhere"
	if _, err := GroupRuns([]*results.Run{a, b}); err == nil || !strings.Contains(err.Error(), "same seed 1") {
		t.Errorf("GroupRuns: err = %v, want a same-seed error", err)
	}
	// The same directory twice is one run.
	if g, err := GroupRuns([]*results.Run{a, a}); err != nil || len(g) != 1 || len(g[0].Runs) != 1 {
		t.Errorf("GroupRuns(a, a) = %v, %v; want one group of one run", g, err)
	}
}

func TestGroupRunsSettings(t *testing.T) {
	t.Parallel()
	a := testRun("E4", "t", "sjf-bsbf", 1, 10)
	a.Summary.Labels["gpu_mem_gib"] = "16"
	b := testRun("E4", "t", "sjf-bsbf", 1, 12)
	b.Summary.Labels["gpu_mem_gib"] = "32"
	b.Dir = "other"
	groups, err := GroupRuns([]*results.Run{b, a})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("got %d groups, want 2 (settings differ)", len(groups))
	}
	v := varyingSettings([]string{groups[0].Setting, groups[1].Setting})
	if v[groups[0].Setting] != "gpu_mem_gib=16" || v[groups[1].Setting] != "gpu_mem_gib=32" {
		t.Errorf("varying settings = %v", v)
	}
}

func TestNaturalCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"trace2", "trace10", -1}, {"trace10", "trace2", 1}, {"a", "a", 0},
		{"gpu_mem_gib=16", "gpu_mem_gib=8", 1}, {"load=0.5", "load=1.0", -1}, {"x", "x1", -1},
	}
	for _, tc := range tests {
		if got := naturalCompare(tc.a, tc.b); got != tc.want {
			t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSortSeries(t *testing.T) {
	t.Parallel()
	names := []string{"zeta", "theorem-1", "sjf-bsbf", "alpha", "tiresias-authors", "fifo", "never-share", "sjf-ffs",
		"sjf-bsbf-fixed", "tiresias", "always-share", "tiresias-testbed", "sjf", "tiresias-entry-order"}
	SortSeries(names)
	want := []string{"fifo", "sjf", "tiresias", "tiresias-entry-order", "tiresias-testbed", "tiresias-authors",
		"sjf-ffs", "sjf-bsbf", "sjf-bsbf-fixed", "never-share", "always-share", "theorem-1", "alpha", "zeta"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("SortSeries (-want +got):\n%s", diff)
	}
}
