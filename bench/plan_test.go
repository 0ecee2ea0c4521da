package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/analysis"
	"github.com/sharebench/sharebench/internal/golden"
)

// TestPlanGolden pins the ordered run IDs of every label to bench/testdata/plan-<label>.txt,
// so that any change of an ID (and so of an output path) is a visible diff (-update).
func TestPlanGolden(t *testing.T) {
	for _, label := range Labels() {
		t.Run(label, func(t *testing.T) {
			var b strings.Builder
			for _, r := range Plan(label) {
				fmt.Fprintf(&b, "%d\t%s\n", r.Index, r.ID)
			}
			path := filepath.Join("testdata", "plan-"+label+".txt")
			if golden.Updating() {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("plan %s changed (-want +got; go test ./bench -run TestPlanGolden -update if intended):\n%s", label, diff)
			}
		})
	}
}

// TestPlanExpansion checks the expansion of every label: stable order and IDs, IDs that are
// the output paths, labels present, and no two runs sharing an output path.
func TestPlanExpansion(t *testing.T) {
	if got := Labels(); !slices.Equal(got, []string{LabelPaper, LabelSmoke}) {
		t.Fatalf("Labels() = %v", got)
	}
	idRE := regexp.MustCompile(`^[A-Za-z0-9-]+/[a-z0-9._-]+/[a-z0-9-]+/seed-[0-9]+$`)
	for _, label := range Labels() {
		plan := Plan(label)
		if len(plan) == 0 {
			t.Fatalf("label %s: empty plan", label)
		}
		if again := Plan(label); !cmp.Equal(plan, again) {
			t.Fatalf("label %s: two expansions differ", label)
		}
		paths := map[string]string{}
		for i, r := range plan {
			if r.Index != i {
				t.Errorf("%s: index %d at position %d", r.ID, r.Index, i)
			}
			if !idRE.MatchString(r.ID) {
				t.Errorf("%s: malformed ID", r.ID)
			}
			if want := fmt.Sprintf("%s/%s/%s/seed-%d", r.Experiment, r.Setting, r.Series, r.Seed); r.ID != want {
				t.Errorf("ID %s, want %s", r.ID, want)
			}
			key := strings.ToLower(filepath.Clean(r.Dir("out")))
			if prev, dup := paths[key]; dup {
				t.Errorf("%s and %s share the output path %s", prev, r.ID, key)
			}
			paths[key] = r.ID
			if r.Labels["experiment"] != r.Experiment || r.Labels["trace"] != r.Trace.Name || r.Trace.Name == "" {
				t.Errorf("%s: labels %v lack experiment or trace", r.ID, r.Labels)
			}
			if r.Setting == tablesDir || r.Setting == figuresDir {
				t.Errorf("%s: setting collides with the aggregation's directories", r.ID)
			}
		}
		// Every series of an experiment runs in every setting and seed: the grid is complete.
		for _, e := range Experiments(label) {
			n := len(e.Settings)
			got := 0
			for _, r := range plan {
				if r.Experiment == e.Name {
					got++
				}
			}
			if want := n * len(e.Series) * len(e.Seeds); got != want {
				t.Errorf("label %s, %s: %d runs, want %d", label, e.Name, got, want)
			}
		}
	}
}

// TestPlanLabels checks the swept parameters and variants carried as labels.
func TestPlanLabels(t *testing.T) {
	plan := Plan(LabelPaper)
	want := map[string][]string{
		"E1":      {"interval_s"},
		"E5":      {"gpu_mem_gib"},
		"E6-load": {"load"},
		"E6-xi":   {"xi_scale"},
	}
	for _, r := range plan {
		for _, k := range want[r.Experiment] {
			if _, ok := r.Labels[k]; !ok {
				t.Errorf("%s: no %s label in %v", r.ID, k, r.Labels)
			}
		}
		isVariant := slices.Contains([]string{"tiresias-authors", "tiresias-entry-order", "tiresias-entry-order-4q", "never-share", "always-share", "theorem-1", "sjf-bsbf-fixed"}, r.Series)
		if v, ok := r.Labels["variant"]; ok != isVariant || (ok && v != r.Series) {
			t.Errorf("%s: variant label %q (set: %v)", r.ID, v, ok)
		}
	}
	// Every experiment compares the policies of its question.
	for _, e := range Experiments(LabelPaper) {
		names := map[string]bool{}
		for _, s := range e.Series {
			names[s.Policy] = true
		}
		want := []string{"fifo", "sjf", "tiresias", "tiresias-testbed", "sjf-ffs", "sjf-bsbf"}
		switch {
		case e.Name == "E5":
			want = []string{"sjf-bsbf-fixed", "sjf-ffs", "sjf-bsbf"}
		case e.Name == "E6-xi", e.Name == "E6-profiles":
			want = []string{"tiresias", "tiresias-testbed", "sjf-ffs", "sjf-bsbf"}
		case e.Name == "E0":
			want = []string{"tiresias", "tiresias-entry-order", "tiresias-testbed", "sjf-bsbf"}
		case e.Name == "E7":
			want = []string{"srtf", "srsf", "muri-s", "tiresias", "antman", "themis", "muri-l", "sjf", "sjf-ffs", "sjf-bsbf"}
		case e.Name == "E7-gavel":
			want = []string{"tiresias", "sjf", "sjf-ffs", "sjf-bsbf"}
		}
		for _, p := range want {
			if !names[p] {
				t.Errorf("%s lacks %s", e.Name, p)
			}
		}
	}
}

// TestPaperDraws: every experiment that checks the claims gives each row at least
// analysis.MinDraws independent draws (a seed changes each of its traces), and the
// experiments behind the decomposition run SJF-BSBF without sharing and, but for E3 (for the
// time of make reproduce), without its sub-batch choice beside it.
func TestPaperDraws(t *testing.T) {
	for _, e := range Experiments(LabelPaper) {
		if !e.Analysis.Claims {
			continue
		}
		if len(e.Seeds) < analysis.MinDraws {
			t.Errorf("%s: %d seeds, want at least %d", e.Name, len(e.Seeds), analysis.MinDraws)
		}
		for _, s := range e.Settings {
			if tr := s.Trace; tr.Gen == nil && tr.Format != "philly" && !tr.PermuteModels {
				t.Errorf("%s/%s: trace %s does not change with the seed", e.Name, s.Name, tr.Name)
			}
		}
		if e.Name == "E6-xi" || e.Name == "E6-profiles" {
			continue
		}
		var never, fixed bool
		for _, s := range e.Series {
			never = never || s.Name == "never-share" && s.Policy == "sjf-bsbf" && s.MaxShare == 1
			fixed = fixed || s.Name == "sjf-bsbf-fixed"
		}
		if !never || !fixed && e.Name != "E3" {
			t.Errorf("%s: never-share %v, sjf-bsbf-fixed %v", e.Name, never, fixed)
		}
	}
}

// TestPlanRejects checks that a broken experiment table is refused.
func TestPlanRejects(t *testing.T) {
	good := Experiment{Name: "X", Seeds: []uint64{1},
		Settings: []Setting{{Name: "s", Trace: TraceSpec{Name: "t", File: "f"}}},
		Series:   []Series{{Name: "fifo", Policy: "fifo"}}}
	if _, err := expand([]Experiment{good}); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(e *Experiment){
		"duplicate setting": func(e *Experiment) { e.Settings = append(e.Settings, e.Settings[0]) },
		"duplicate series":  func(e *Experiment) { e.Series = append(e.Series, e.Series[0]) },
		"reserved setting":  func(e *Experiment) { e.Settings[0].Name = figuresDir },
		"path in name":      func(e *Experiment) { e.Settings[0].Name = "a/b" },
		"reserved label":    func(e *Experiment) { e.Settings[0].Params = []Param{{"trace", "x"}} },
		"unsorted seeds":    func(e *Experiment) { e.Seeds = []uint64{2, 1} },
		"no trace name":     func(e *Experiment) { e.Settings[0].Trace.Name = "" },
	} {
		t.Run(name, func(t *testing.T) {
			e := good
			e.Settings = slices.Clone(good.Settings)
			e.Series = slices.Clone(good.Series)
			mutate(&e)
			if _, err := expand([]Experiment{e}); err == nil {
				t.Error("accepted")
			}
		})
	}
	if _, err := expand([]Experiment{good, good}); err == nil {
		t.Error("accepted an experiment declared twice")
	}
}

// TestSelectAndFind checks --only and --run resolution.
func TestSelectAndFind(t *testing.T) {
	plan := Plan(LabelPaper)
	e6, err := Select(plan, []string{"E6"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range e6 {
		if !strings.HasPrefix(r.Experiment, "E6-") {
			t.Errorf("E6 selected %s", r.ID)
		}
	}
	if len(e6) == 0 {
		t.Error("E6 selected nothing")
	}
	if _, err := Select(plan, []string{"E9"}); err == nil {
		t.Error("unknown experiment accepted")
	}
	if r, err := Find(plan, "3"); err != nil || r.Index != 3 {
		t.Errorf("Find(3) = %v, %v", r, err)
	}
	if r, err := Find(plan, plan[5].ID); err != nil || r.Index != 5 {
		t.Errorf("Find(ID) = %v, %v", r, err)
	}
	for _, bad := range []string{"-1", fmt.Sprint(len(plan)), "nope"} {
		if _, err := Find(plan, bad); err == nil {
			t.Errorf("Find(%q) succeeded", bad)
		}
	}
}
