// Package builtin registers the built-in policies: the rules of package schedulers, carried out
// by package walk, the external policy of package external, and the authors' names for them.
package builtin

import (
	"encoding/json"
	"strings"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/external"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/policy/walk"
)

// Registry returns the built-in policies, run by the fast executors unless an option says
// otherwise, and their aliases. Unlike the authors' scripts, sjf-ffs and sjf-bsbf without a
// suffix do not preempt (the paper's headline variants); "-preempt" selects the preemptive path.
func Registry(opts ...Option) *policy.Registry {
	var c config
	for _, o := range opts {
		o(&c)
	}
	r := &policy.Registry{}
	for _, p := range policies {
		must(r.Register(p.info(), p.factory(c)))
	}
	must(external.Register(r))
	for _, a := range aliases {
		must(r.Alias(a[0], a[1]))
	}
	return r
}

// DefaultMaxShare is how many jobs a GPU holds at once unless the user says otherwise, for the
// policy of spec: 4 for muri-s and muri-l (the Muri simulator's packing_num), else 2.
func DefaultMaxShare(spec string) int {
	name, _, _ := strings.Cut(spec, "{")
	for _, a := range aliases {
		if a[0] == name {
			name, _, _ = strings.Cut(a[1], "{")
		}
	}
	switch name {
	case schedulers.KeyMuriS, schedulers.KeyMuriL:
		return 4
	}
	return 2
}

// Option selects how the built-in policies run, for tests.
type Option func(*config)

type config struct {
	reference bool
	fast      []walk.Option
}

// Reference runs every built-in policy on its plain executor (walk.Reference, and
// schedulers.Tiresias itself) instead of the fast one.
func Reference() Option { return func(c *config) { c.reference = true } }

// Fast passes options to the fast executors.
func Fast(opts ...walk.Option) Option { return func(c *config) { c.fast = append(c.fast, opts...) } }

// run returns the policy that carries out declaration d.
func (c config) run(d *policy.Greedy) policy.Policy {
	if c.reference {
		return walk.Reference(d)
	}
	return walk.Fast(d, c.fast...)
}

// builtin is one built-in policy: its key, what it is, its default arguments and its rule.
type builtin struct {
	key, brief string
	defaults   any
	build      func(c config, defaults any, args json.RawMessage) (policy.Policy, error)
}

// The built-in policies, in the order "sharebench policies" lists them.
var policies = []builtin{
	{schedulers.KeyFIFO, "FIFO as the authors' fifo (Lai-JX/Scheduler schedulers.py): submission order, exclusive YARN placement, preemptive (victims from the lowest priority up, only jobs with > 100 iterations left)",
		schedulers.FIFOArgs{Preempt: true, Victims: policy.VictimsAuthors}, greedy(schedulers.FIFO)},
	{schedulers.KeySJF, "SRTF as the authors' sjf (Lai-JX/Scheduler schedulers.py): remaining time, exclusive YARN placement, preemptive as fifo",
		schedulers.SJFArgs{Preempt: true, Victims: policy.VictimsAuthors}, greedy(schedulers.SJF)},
	// The simulator lineage's dlas-gpu: num_queue = 3, so of its limits 3250/7200/18000
	// GPU-seconds only the first two apply.
	{schedulers.KeyTiresias, "2D-LAS as the Tiresias/Muri simulators' dlas-gpu (Rivendile/Muri simulator/run_sim.py dlas_sim_jobs): queues by GPU-time, every job re-decided at every event by counting free GPUs, waiting jobs behind running ones in each queue; preemptive",
		schedulers.TiresiasArgs{LimitsS: []float64{3250, 7200}, Service: "gpu-time"}, tiresias},
	{schedulers.KeyTiresiasGittins, "2D-LAS with Gittins-index order as the Tiresias simulator's dlas-gpu-gittins, kept in Rivendile/Muri simulator/run_sim.py (dlas_sim_jobs, get_gittins_index, cal_r_gittins_index, parse_job_dist): tiresias's queues and walk, each queue sorted by the Gittins index of the job's attained GPU-time (the Tiresias simulator's yarn-gput1000 job sizes, quantum delta_s), then submission second",
		schedulers.TiresiasGittinsArgs{LimitsS: []float64{3250, 7200}, Service: "gpu-time", DeltaS: 3250}, tiresiasGittins},
	{schedulers.KeySRTF, "SRTF as the Muri simulator's shortest (Rivendile/Muri simulator/run_sim.py shortest_first_sim_jobs): every job re-decided at every event, by remaining time, placed in that order on an empty cluster with YARN (cluster.py ms_yarn_placement); preemptive",
		struct{}{}, shortest(schedulers.NewSRTF)},
	{schedulers.KeySRSF, "SRSF as the Muri simulator's shortest-gpu (Rivendile/Muri simulator/run_sim.py shortest_first_sim_jobs with gputime): srtf ordered by remaining GPU-time; preemptive",
		struct{}{}, shortest(schedulers.NewSRSF)},
	{schedulers.KeyAntMan, "AntMan as the Muri simulator's antman (Rivendile/Muri simulator/run_sim.py antman_sim_jobs, antman_calc_iter_time; switch.py antman_alloc_res): resource-guaranteed jobs (the trace's priority 0) first, on GPUs free of other such jobs, reserving them until they have all; opportunistic ones on the least loaded GPUs, slowed to the gaps of the resource-guaranteed job's stages (resource_time_0..2); never preempts",
		struct{}{}, antman},
	{schedulers.KeyThemis, "Themis as the Muri simulator's themis (Rivendile/Muri simulator/run_sim.py themis_sim_jobs, get_isolated_throughputs, get_base_constraints): every job a share of its GPUs minimising the largest finish-time fairness ratio (solved exactly, the analytic centre of the optimal shares where the optimum is not unique), every job re-decided at every event by share per second run, placed in that order on an empty cluster with YARN; preemptive",
		struct{}{}, themis},
	{schedulers.KeyMuriS, "Muri-S as the Muri simulator's multi-resource-blossom-same-gpu (Rivendile/Muri simulator/run_sim.py multi_resource_blossom_same_sim_jobs; matching.py _Blossom_Same, _Packing): jobs of one GPU count grouped by maximum-weight matching (up to max-share, 4 by default) to interleave their stages (resource_time_0..2), every job re-decided at every event by remaining GPU-time; preemptive",
		struct{}{}, muri(schedulers.NewMuriS)},
	{schedulers.KeyMuriL, "Muri-L as the Muri simulator's multi-resource-blossom-same-gpu-unaware (run_sim.py multi_resource_blossom_same_sim_jobs without durations): muri-s ordered by attained GPU-time; preemptive",
		struct{}{}, muri(schedulers.NewMuriL)},
	// 2D-LAS on the authors' physical loop, with the lineage's limits; the authors' own settings
	// are the tiresias-testbed alias.
	{schedulers.KeyTiresiasEntry, "2D-LAS on the authors' physical loop (Lai-JX/Scheduler Tiresias_jobs, jobs_placement): first come first served by queue entry, YARN placement, preemptive as fifo, starvation promotion",
		schedulers.TiresiasEntryArgs{LimitsS: []float64{3250, 7200}, Service: "gpu-time", Preempt: true, Victims: policy.VictimsAuthors}, greedy(schedulers.NewTiresiasEntry)},
	{schedulers.KeySJFFFS, "SJF with aggressive first-fit sharing as the authors' sjf-ffs-no-preempt (merge_alloc_res): idle GPUs first, then any GPU with room, no benefit check; no preemption",
		schedulers.SJFFFSArgs{Victims: policy.VictimsAuthors}, greedy(schedulers.SJFFFS)},
	{schedulers.KeySJFBSBF, "SJF-BSBF as the authors' sjf-bsbf-no-preempt (bsbf_alloc_res, share_check): idle GPUs first, then partners passing the Theorem 1 share check by t_con, plus the paper's sub-batch choice; no preemption",
		schedulers.SJFBSBFArgs{Victims: policy.VictimsAuthors, SubBatch: true}, greedy(schedulers.SJFBSBF)},
}

// aliases are the authors' names (docs/paper.md §5.1): a base, "s" for the consolidating
// placement, "-no-preempt" or "-preempt", "-m" for MPS; and the authors' Tiresias (their
// physical code: 2 queues, 700 s of wall time, starvation factor 1), which tiresias-authors
// and Tiresias walk in arrival order, as that code does.
var aliases = [][2]string{
	{"tiresias-testbed", `tiresias-entry-order{"limits_s":[700],"service":"time","starve_factor":1}`},
	{"tiresias-authors", `tiresias-entry-order{"limits_s":[700],"service":"time","starve_factor":1,"authors_order":true}`},
	{"Tiresias", `tiresias-entry-order{"limits_s":[700],"service":"time","starve_factor":1,"authors_order":true}`},
	{"fifo-no-preempt", `fifo{"preempt":false}`},
	{"sjf-no-preempt", `sjf{"preempt":false}`},
	{"sjf-bsbf-fixed", `sjf-bsbf{"sub_batch":false}`},
	{"sjf-ffs-m", `sjf-ffs{"mps":true}`},
	{"sjf-ffs-no-preempt", `sjf-ffs`},
	{"sjf-ffs-no-preempt-m", `sjf-ffs{"mps":true}`},
	{"sjf-ffs-preempt", `sjf-ffs{"preempt":true}`},
	{"sjf-ffs-preempt-m", `sjf-ffs{"mps":true,"preempt":true}`},
	{"sjf-ffss", `sjf-ffs{"consolidate":true}`},
	{"sjf-ffss-m", `sjf-ffs{"consolidate":true,"mps":true}`},
	{"sjf-ffss-no-preempt", `sjf-ffs{"consolidate":true}`},
	{"sjf-ffss-no-preempt-m", `sjf-ffs{"consolidate":true,"mps":true}`},
	{"sjf-ffss-preempt", `sjf-ffs{"consolidate":true,"preempt":true}`},
	{"sjf-ffss-preempt-m", `sjf-ffs{"consolidate":true,"mps":true,"preempt":true}`},
	{"sjf-bsbf-m", `sjf-bsbf{"mps":true}`},
	{"sjf-bsbf-no-preempt", `sjf-bsbf`},
	{"sjf-bsbf-no-preempt-m", `sjf-bsbf{"mps":true}`},
	{"sjf-bsbf-preempt", `sjf-bsbf{"preempt":true}`},
	{"sjf-bsbf-preempt-m", `sjf-bsbf{"mps":true,"preempt":true}`},
	{"sjf-bsbfs", `sjf-bsbf{"consolidate":true}`},
	{"sjf-bsbfs-m", `sjf-bsbf{"consolidate":true,"mps":true}`},
	{"sjf-bsbfs-no-preempt", `sjf-bsbf{"consolidate":true}`},
	{"sjf-bsbfs-no-preempt-m", `sjf-bsbf{"consolidate":true,"mps":true}`},
	{"sjf-bsbfs-preempt", `sjf-bsbf{"consolidate":true,"preempt":true}`},
	{"sjf-bsbfs-preempt-m", `sjf-bsbf{"consolidate":true,"mps":true,"preempt":true}`},
}

func (b builtin) info() policy.Info {
	return policy.Info{Name: b.key, Brief: b.brief, Defaults: mustJSON(b.defaults)}
}

func (b builtin) factory(c config) policy.Factory {
	return func(args json.RawMessage) (policy.Policy, error) { return b.build(c, b.defaults, args) }
}

// greedy builds a factory of a declaration from its arguments: the defaults, overridden by the
// JSON arguments given.
func greedy[A any](declare func(A) (*policy.Greedy, error)) func(config, any, json.RawMessage) (policy.Policy, error) {
	return func(c config, defaults any, raw json.RawMessage) (policy.Policy, error) {
		var a A
		if err := decode(defaults, raw, &a); err != nil {
			return nil, err
		}
		d, err := declare(a)
		if err != nil {
			return nil, err
		}
		return c.run(d), nil
	}
}

func tiresias(c config, defaults any, raw json.RawMessage) (policy.Policy, error) {
	var a schedulers.TiresiasArgs
	if err := decode(defaults, raw, &a); err != nil {
		return nil, err
	}
	t, err := schedulers.NewTiresias(a)
	if err != nil {
		return nil, err
	}
	if c.reference {
		return t, nil
	}
	return walk.FastTiresias(t), nil
}

func tiresiasGittins(c config, defaults any, raw json.RawMessage) (policy.Policy, error) {
	var a schedulers.TiresiasGittinsArgs
	if err := decode(defaults, raw, &a); err != nil {
		return nil, err
	}
	t, err := schedulers.NewTiresiasGittins(a)
	if err != nil {
		return nil, err
	}
	if c.reference {
		return t, nil
	}
	return walk.FastTiresiasGittins(t), nil
}

// shortest builds srtf or srsf, which take no arguments.
func shortest(rule func() *schedulers.Shortest) func(config, any, json.RawMessage) (policy.Policy, error) {
	return func(c config, defaults any, raw json.RawMessage) (policy.Policy, error) {
		var a struct{}
		if err := decode(defaults, raw, &a); err != nil {
			return nil, err
		}
		if c.reference {
			return rule(), nil
		}
		return walk.FastShortest(rule()), nil
	}
}

// antman builds antman, which takes no arguments and runs as its rule on either executor: each
// event costs a pass over the waiting jobs, which ends once no GPU is left to take.
func antman(_ config, defaults any, raw json.RawMessage) (policy.Policy, error) {
	var a struct{}
	if err := decode(defaults, raw, &a); err != nil {
		return nil, err
	}
	return schedulers.NewAntMan(), nil
}

// themis builds themis, which takes no arguments and runs as its rule on either executor.
func themis(_ config, defaults any, raw json.RawMessage) (policy.Policy, error) {
	var a struct{}
	if err := decode(defaults, raw, &a); err != nil {
		return nil, err
	}
	return schedulers.NewThemis(), nil
}

// muri builds muri-s or muri-l, which take no arguments and run as their rule on either executor.
func muri(rule func() *schedulers.Muri) func(config, any, json.RawMessage) (policy.Policy, error) {
	return func(_ config, defaults any, raw json.RawMessage) (policy.Policy, error) {
		var a struct{}
		if err := decode(defaults, raw, &a); err != nil {
			return nil, err
		}
		return rule(), nil
	}
}

// decode fills a with the defaults, then with the JSON arguments over them. The defaults go
// through JSON so that a shares none of their slices.
func decode(defaults any, raw json.RawMessage, a any) error {
	if err := json.Unmarshal([]byte(mustJSON(defaults)), a); err != nil {
		return err
	}
	return policy.DecodeArgs(raw, a)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
