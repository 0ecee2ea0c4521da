package bench

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sharebench/sharebench/policy/builtin"
)

// Output directory names of the aggregation step inside an experiment's directory; no setting
// may use them.
const (
	tablesDir  = "tables"
	figuresDir = "figures"
)

// RunSpec is one independent run of a plan: a trace × cluster × policy × seed × parameters.
// It carries everything needed to execute it alone (RunSpec.Run), e.g. as one task of a batch
// array, and its output path is a function of its ID only.
type RunSpec struct {
	// Index is the run's position in its plan.
	Index int `json:"-"`
	// ID is "<experiment>/<setting>/<series>/seed-<n>": unique in a plan, stable across plans,
	// and the run directory's path relative to the output root.
	ID string `json:"id"`
	// Experiment, Setting and Series name the run's place in the grid.
	Experiment string `json:"experiment"`
	Setting    string `json:"setting"`
	Series     string `json:"series"`
	// Policy is the registry spec.
	Policy string `json:"policy"`
	// Seed seeds the trace (Philly mapping, generator, a trace file's permuted models);
	// a trace file without permute_models ignores it.
	Seed uint64 `json:"seed"`
	// Trace, Profile, Cluster, Interval and DropOversized configure the simulation.
	Trace         TraceSpec   `json:"trace"`
	Profile       ProfileSpec `json:"profile"`
	Cluster       ClusterSpec `json:"cluster"`
	Interval      Seconds     `json:"interval_s"`
	DropOversized bool        `json:"drop_oversized,omitempty"`
	// Engine holds the engine's options (restart costs, the Muri lineage's effects).
	Engine EngineSpec `json:"engine,omitzero"`
	// Labels are written into summary.json: experiment, trace, the swept parameters and the
	// variant.
	Labels map[string]string `json:"labels"`
	// Keep says which files the run directory keeps.
	Keep Keep `json:"keep"`
	// LoadCandidates lists cluster sizes for which run.json reports the offered load.
	LoadCandidates []int `json:"load_candidates,omitempty"`
}

// Seconds is a duration written in JSON as seconds.
type Seconds time.Duration

// MarshalJSON writes the duration as a number of seconds.
func (s Seconds) MarshalJSON() ([]byte, error) { return []byte(num(time.Duration(s).Seconds())), nil }

// Dir returns the run directory below the output root.
func (r *RunSpec) Dir(outRoot string) string { return path.Join(outRoot, r.ID) }

// Plan expands the shipped experiments of a label into their runs, in a stable order:
// experiments in file order, then settings, series and seeds in declaration order. Index is the
// position in the returned slice. An unknown label gives an empty plan.
func Plan(label string) []RunSpec {
	plan, err := expand(Experiments(label))
	if err != nil {
		// The specs are validated by the tests; a broken one is a programming error.
		panic(err)
	}
	return plan
}

// PlanOf expands the given experiments (e.g. one read by LoadSpecFile) into their runs.
func PlanOf(exps []Experiment) ([]RunSpec, error) { return expand(exps) }

// expand validates the experiments and expands them.
func expand(exps []Experiment) ([]RunSpec, error) {
	var plan []RunSpec
	ids := map[string]bool{}
	names := map[string]bool{}
	for _, e := range exps {
		if err := e.Validate(); err != nil {
			return nil, err
		}
		if names[e.Name] {
			return nil, fmt.Errorf("bench: experiment %s declared twice", e.Name)
		}
		names[e.Name] = true
		for _, s := range e.Settings {
			for _, se := range e.Series {
				for _, seed := range e.Seeds {
					r := RunSpec{
						Experiment: e.Name, Setting: s.Name, Series: se.Name, Policy: se.Policy, Seed: seed,
						Trace: s.Trace, Profile: s.Profile, Cluster: s.Cluster, Interval: Seconds(s.Interval),
						DropOversized: s.DropOversized, Engine: s.Engine, Keep: e.Keep, LoadCandidates: slices.Clone(s.LoadCandidates),
					}
					if se.MaxShare != 0 {
						r.Cluster.MaxShare = se.MaxShare
					} else if d := builtin.DefaultMaxShare(se.Policy); d != 2 {
						// A policy whose own default differs from the paper's two jobs per GPU
						// (muri-s and muri-l: Muri's packing of four) runs at its default.
						r.Cluster.MaxShare = d
					}
					r.ID = fmt.Sprintf("%s/%s/%s/seed-%d", e.Name, s.Name, se.Name, seed)
					r.Labels = map[string]string{"experiment": e.Name, "trace": s.Trace.Name}
					for _, p := range s.Params {
						r.Labels[p.Key] = p.Value
					}
					if se.Variant {
						r.Labels["variant"] = se.Name
					}
					if ids[r.ID] {
						return nil, fmt.Errorf("bench: run %s planned twice", r.ID)
					}
					ids[r.ID] = true
					r.Index = len(plan)
					plan = append(plan, r)
				}
			}
		}
	}
	return plan, nil
}

// Select returns the runs of plan whose experiment matches one of only: a name ("E2") matches
// that experiment and its sub-experiments ("E6" matches "E6-load" and "E6-xi"). An empty only
// selects everything. Naming an experiment that matches nothing is an error.
func Select(plan []RunSpec, only []string) ([]RunSpec, error) {
	if len(only) == 0 {
		return plan, nil
	}
	var out []RunSpec
	used := make([]bool, len(only))
	for _, r := range plan {
		for i, o := range only {
			if matchExperiment(r.Experiment, o) {
				out = append(out, r)
				used[i] = true
				break
			}
		}
	}
	for i, o := range only {
		if !used[i] {
			return nil, fmt.Errorf("bench: --only %s: no such experiment in the plan (have %s)", o, strings.Join(experimentNames(plan), ", "))
		}
	}
	return out, nil
}

// matchExperiment reports whether experiment name is sel or one of its sub-experiments.
func matchExperiment(name, sel string) bool {
	return name == sel || strings.HasPrefix(name, sel+"-")
}

// experimentNames lists the distinct experiments of a plan in order.
func experimentNames(plan []RunSpec) []string {
	var names []string
	for _, r := range plan {
		if len(names) == 0 || names[len(names)-1] != r.Experiment {
			names = append(names, r.Experiment)
		}
	}
	return names
}

// Find returns the run of plan with the given ID, or with the given index when ref is a
// decimal number.
func Find(plan []RunSpec, ref string) (*RunSpec, error) {
	var idx int
	if _, err := fmt.Sscanf(ref, "%d", &idx); err == nil && fmt.Sprint(idx) == ref {
		if idx < 0 || idx >= len(plan) {
			return nil, fmt.Errorf("bench: run index %d out of range [0, %d)", idx, len(plan))
		}
		return &plan[idx], nil
	}
	for i := range plan {
		if plan[i].ID == ref {
			return &plan[i], nil
		}
	}
	return nil, fmt.Errorf("bench: no run %q in the plan", ref)
}
