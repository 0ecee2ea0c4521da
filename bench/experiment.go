package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/sim"
)

// Labels name the shipped sets of experiments of "sharebench reproduce --label".
const (
	// LabelSmoke marks the small experiments of "make smoke": seconds, no public data needed.
	LabelSmoke = "smoke"
	// LabelPaper marks the full reproduction of "make reproduce".
	LabelPaper = "paper"
)

// Experiment is one experiment of the reproduction: a grid of settings × series × seeds,
// declared once as a Go value and expanded by Plan into independent runs.
type Experiment struct {
	// Name identifies the experiment in paths and labels, e.g. "E2" or "E6-load".
	Name string
	// Title describes it in one line.
	Title string
	// Settings are the trace × cluster × parameter combinations, in output order.
	Settings []Setting
	// Series are the policies (or policy variants) compared in every setting.
	Series []Series
	// Seeds are the seeds of every setting × series.
	Seeds []uint64
	// Keep says what each run directory keeps.
	Keep Keep
	// Analysis says which tables and figures the aggregation draws.
	Analysis Analysis
}

// Setting is one trace × cluster × parameters combination of an experiment.
type Setting struct {
	// Name is the setting's directory name, e.g. "trace1" or "trace1-mem16".
	Name string
	// Trace is the trace.
	Trace TraceSpec
	// Profile is the interference profile.
	Profile ProfileSpec
	// Cluster is the cluster.
	Cluster ClusterSpec
	// Interval is the scheduling interval; 0 is event-driven.
	Interval time.Duration
	// Params are the swept parameters, written as run labels (e.g. gpu_mem_gib=16).
	Params []Param
	// DropOversized drops jobs larger than the cluster (with a note in the summary).
	DropOversized bool
	// Engine holds the engine's options.
	Engine EngineSpec
	// LoadCandidates are cluster sizes (GPUs) for which run.json lists the trace's offered
	// load, to argue the choice of cluster size.
	LoadCandidates []int
}

// EngineSpec holds the engine's options of a run (sim.Config).
type EngineSpec struct {
	// RestartCost is what a preempted job pays when it starts again (sim.ParseRestartCost);
	// empty means "auto".
	RestartCost string `json:"restart_cost,omitempty"`
	// IterTimeScale and OverheadEveryEvent are the Muri simulator's lineage effects.
	IterTimeScale      float64 `json:"iter_time_scale,omitempty"`
	OverheadEveryEvent bool    `json:"overhead_every_event,omitempty"`
}

// restart returns the restart cost of the spec.
func (e EngineSpec) restart() (sim.RestartCost, error) {
	if e.RestartCost == "" {
		return sim.RestartCost{Source: sim.RestartAuto}, nil
	}
	return sim.ParseRestartCost(e.RestartCost)
}

// ClusterSpec is a homogeneous cluster.
type ClusterSpec struct {
	Nodes       int `json:"nodes"`
	GPUsPerNode int `json:"gpus_per_node"`
	// MemGiB is the memory of one GPU in GiB.
	MemGiB float64 `json:"gpu_mem_gib"`
	// MaxShare is the most jobs one GPU holds at once; 0 means 2, the paper's setting. 1
	// disables sharing: a sharing policy then runs its own order and placement without ever
	// co-locating (the never-share variant of the decomposition in REPRODUCE.md).
	MaxShare int `json:"max_share,omitempty"`
}

// Shape returns the cluster shape, with at most two jobs per GPU unless MaxShare says
// otherwise.
func (c ClusterSpec) Shape() cluster.Shape {
	share := c.MaxShare
	if share == 0 {
		share = 2
	}
	return cluster.Shape{Nodes: c.Nodes, GPUsPerNode: c.GPUsPerNode,
		GPUMemBytes: int64(math.Round(c.MemGiB * float64(cluster.GiB))), MaxShare: share}
}

// Param is a swept parameter: a label key and its value as written (a number for curves).
type Param struct {
	Key, Value string
}

// Series is one compared policy: a registry spec shown under a name.
type Series struct {
	// Name is the series' directory name and, for variants, its "variant" label.
	Name string
	// Policy is the registry spec (a key, an alias, or a key with JSON arguments).
	Policy string
	// Variant marks an ablation variant: the run gets the label variant=Name, which analysis
	// shows instead of the policy name.
	Variant bool
	// MaxShare, when set, replaces the cluster's limit of jobs per GPU for this series only
	// (ClusterSpec.MaxShare): 1 runs a sharing policy that never shares.
	MaxShare int
}

// Keep says which files a run directory keeps, to bound the size of committed outputs.
// Summary metrics (summary.json) always cover every job.
type Keep struct {
	// DecisionsUpTo writes decisions.jsonl for traces of at most this many jobs (0: never).
	DecisionsUpTo int `json:"decisions_up_to,omitempty" yaml:"decisions_up_to"`
	// JobRows bounds jobs.csv (0: every job): a trace of n jobs keeps every k-th job in job-id
	// order, k = ⌈n / JobRows⌉, a systematic sample; the summary notes say so.
	JobRows int `json:"job_rows,omitempty" yaml:"job_rows"`
	// UtilRows merges util.csv's equal-width buckets into at most this many (0: as written).
	UtilRows int `json:"util_rows,omitempty" yaml:"util_rows"`
}

// jobsEvery returns the sampling step k for a trace of n jobs.
func (k Keep) jobsEvery(n int) int {
	if k.JobRows <= 0 || n <= k.JobRows {
		return 1
	}
	return (n + k.JobRows - 1) / k.JobRows
}

// Analysis says which tables and figures the aggregation step draws for an experiment.
type Analysis struct {
	// Baselines are the series the summary tables report Δ against; the first is the main
	// one (summary.*), the others get summary-vs-<baseline>.*.
	Baselines []string
	// Claims writes the paper-claims table (needs tiresias, sjf-ffs and sjf-bsbf series), and
	// includes the experiment in the top-level claims table.
	Claims bool
	// PerCell draws JCT and queueing-delay CDFs and utilization over time for every setting
	// (or only for CellSettings when it is not empty).
	PerCell      bool
	CellSettings []string
	// Jobs writes the per-job statistics table.
	Jobs bool
	// Bars draws average-JCT bars over all cells.
	Bars bool
	// CurveX, when set, draws one curve per trace with this label on the x axis.
	CurveX string
}

// Validate reports an experiment that cannot be expanded into distinct, well-formed runs.
func (e Experiment) Validate() error {
	if !validName(e.Name) {
		return fmt.Errorf("bench: experiment %q: invalid name", e.Name)
	}
	if len(e.Settings) == 0 || len(e.Series) == 0 || len(e.Seeds) == 0 {
		return fmt.Errorf("bench: experiment %s: needs settings, series and seeds", e.Name)
	}
	seen := map[string]bool{}
	for _, s := range e.Settings {
		if !validName(s.Name) || s.Name == tablesDir || s.Name == figuresDir {
			return fmt.Errorf("bench: experiment %s: setting %q: invalid name", e.Name, s.Name)
		}
		if seen["setting:"+s.Name] {
			return fmt.Errorf("bench: experiment %s: setting %s twice", e.Name, s.Name)
		}
		seen["setting:"+s.Name] = true
		if s.Trace.Name == "" {
			return fmt.Errorf("bench: experiment %s: setting %s: trace without a name", e.Name, s.Name)
		}
		for _, p := range s.Params {
			if p.Key == "" || p.Key == "experiment" || p.Key == "trace" || p.Key == "variant" {
				return fmt.Errorf("bench: experiment %s: setting %s: parameter key %q is reserved", e.Name, s.Name, p.Key)
			}
		}
	}
	for _, s := range e.Series {
		if !validName(s.Name) || seen["series:"+s.Name] {
			return fmt.Errorf("bench: experiment %s: series %q: invalid or repeated name", e.Name, s.Name)
		}
		seen["series:"+s.Name] = true
	}
	if !slices.IsSorted(e.Seeds) || len(slices.Compact(slices.Clone(e.Seeds))) != len(e.Seeds) {
		return fmt.Errorf("bench: experiment %s: seeds must be ascending and distinct", e.Name)
	}
	return nil
}

// validName accepts a single path component made of ASCII letters, digits, '.', '-' and '_',
// not starting with '.'.
func validName(s string) bool {
	if s == "" || s == "." || s == ".." || strings.HasPrefix(s, ".") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// num formats a parameter value the way labels carry it: the shortest decimal.
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
