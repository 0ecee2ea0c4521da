package bench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/builtin"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/sim"
	"github.com/sharebench/sharebench/trace"
)

// A sweep's runs that differ only in the profile's slowdowns (E6-xi's ξ scales, E6-profiles'
// symmetric ξ) simulate the same thing when their policy never shares a GPU (policy.Exclusive):
// such a policy never reads ξ, and neither does the engine when no GPU is shared. The sweep
// simulates each distinct one once and hands its result to the others; their outputs stay
// byte-identical (TestMemoSameOutputs), and run.json and summary.json still describe each run's
// own profile.
//
// Runs that may meet are grouped before the sweep starts by everything but the profile's
// derivation and ξ scale; the simulations of a group are dropped when its last run ends, so the
// memo holds results only while a later run can still use them. Runs of sharing policies that
// are identical in every input but their names (one simulation reported by two experiments)
// are grouped too, and simulated once (memoGroupKey).

// The memo also keeps each run's jobs and trace statistics for the other runs that read the same
// trace, seed, profile and cluster (every policy of a setting): a generated trace is drawn twice
// to calibrate its load, and the statistics look up every job's step time.

// memo holds the groups of one or more sweeps.
type memo struct {
	mu     sync.Mutex
	keys   map[*RunSpec]runKeys // the registered runs' keys, computed once
	groups map[string]*memoGroup
	inputs map[string]*memoInputs // by inputsKey
	hits   int                    // simulations handed on (for tests)
	reads  int                    // runs that read shared inputs (for tests)
}

type memoInputs struct {
	left  int // runs not yet finished
	once  sync.Once
	jobs  []trace.Job
	stats TraceStats
	err   error
}

// inputsKey identifies what a run's jobs and statistics depend on; "" (a spec that does not
// encode, such as an infinite load scale) shares nothing.
func inputsKey(r *RunSpec) string {
	shape := r.Cluster.Shape()
	b, err := json.Marshal(struct {
		Trace   TraceSpec
		Seed    uint64
		Profile ProfileSpec
		GPUs    int
		Mem     int64
	}{r.Trace, r.Seed, r.Profile, shape.GPUs(), shape.GPUMemBytes})
	if err != nil {
		return ""
	}
	return string(b)
}

// runInputs returns run r's jobs (the caller's own copy) and their statistics, computed once for
// the runs registered with the same inputs.
func (m *memo) runInputs(r *RunSpec, load func() ([]trace.Job, TraceStats, error)) ([]trace.Job, TraceStats, error) {
	m.mu.Lock()
	e := m.inputs[m.keys[r].inputs] // none under ""
	if e != nil {
		m.reads++
	}
	m.mu.Unlock()
	if e == nil {
		return load()
	}
	e.once.Do(func() { e.jobs, e.stats, e.err = load() })
	if e.err != nil {
		return nil, TraceStats{}, e.err
	}
	return slices.Clone(e.jobs), e.stats, nil
}

type memoGroup struct {
	left  int // runs of the group not yet finished
	exact bool
	sims  map[[sha256.Size]byte]*memoSim
}

type memoSim struct {
	done chan struct{}
	res  *sim.Result
	err  error
}

// memoGroupKey returns the group of run r and whether its runs are identical, or "" when r
// never shares a simulation: it keeps a decision log, its policy spec does not resolve, or its
// policy runs in another process (which need not be deterministic). Runs of a policy that
// never shares a GPU (policy.Exclusive, or any policy on a cluster of one job per GPU) are
// grouped by everything but the profile's derivation and ξ scale, as above; any other run is
// grouped with the runs identical to it in every input (E6-xi's scale 1 and E6-load's load 1,
// say, are the same simulation), which hand on their result unconditionally: the simulator
// gives equal outputs for equal inputs.
func memoGroupKey(r *RunSpec) (key string, exact bool) {
	if r.Keep.DecisionsUpTo > 0 {
		return "", false
	}
	p, err := builtin.Registry().New(r.Policy)
	if err != nil {
		return "", false
	}
	name, args, err := builtin.Registry().Resolve(r.Policy)
	if err != nil || name == policy.KeyExternal {
		return "", false
	}
	_, excl := p.(policy.Exclusive)
	excl = excl || r.Cluster.Shape().MaxShare == 1
	prof := r.Profile
	kind := memoExact
	if excl {
		prof = ProfileSpec{File: r.Profile.File, ModelMap: r.Profile.ModelMap}
		kind = memoExclusive
	}
	g := struct {
		Kind          string
		Policy        string
		Seed          uint64
		Trace         TraceSpec
		Profile       ProfileSpec
		Cluster       ClusterSpec
		Interval      Seconds
		DropOversized bool
		Engine        EngineSpec
	}{kind, name + string(args), r.Seed, r.Trace, prof, r.Cluster, r.Interval, r.DropOversized, r.Engine}
	b, err := json.Marshal(g)
	if err != nil {
		return "", false
	}
	return string(b), kind == memoExact
}

// The kinds of memo groups: runs of a policy that never shares, differing in ξ only, and runs
// identical in every input.
const (
	memoExclusive = "exclusive"
	memoExact     = "exact"
)

// runKeys are a run's memoGroupKey and inputsKey, and whether its group is of identical runs.
type runKeys struct {
	group, inputs string
	exact         bool
}

// add registers runs about to be swept; groups of one are left out. Only registered runs share.
func (m *memo) add(runs []RunSpec) {
	count, inputs := map[string]int{}, map[string]int{}
	keys := make([]runKeys, len(runs))
	for i := range runs {
		g, exact := memoGroupKey(&runs[i])
		keys[i] = runKeys{g, inputsKey(&runs[i]), exact}
		if k := keys[i].group; k != "" {
			count[k]++
		}
		if k := keys[i].inputs; k != "" {
			inputs[k]++
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[*RunSpec]runKeys{}
	}
	for i := range runs {
		m.keys[&runs[i]] = keys[i]
	}
	m.inputs = register(m.inputs, inputs, func(n int) *memoInputs { return &memoInputs{left: n} })
	m.groups = register(m.groups, count, func(n int) *memoGroup {
		return &memoGroup{left: n, sims: map[[sha256.Size]byte]*memoSim{}}
	})
	for i := range runs {
		if g := m.groups[keys[i].group]; g != nil {
			g.exact = keys[i].exact
		}
	}
}

// counted is an entry kept until its last run ends.
type counted interface{ runsLeft() *int }

func (g *memoGroup) runsLeft() *int  { return &g.left }
func (e *memoInputs) runsLeft() *int { return &e.left }

// register adds to dst the keys counted at least twice, making new entries with mk.
func register[E counted](dst map[string]E, counts map[string]int, mk func(n int) E) map[string]E {
	for k, n := range counts {
		if n < 2 {
			continue
		}
		if dst == nil {
			dst = map[string]E{}
		}
		if e, ok := dst[k]; ok {
			*e.runsLeft() += n
		} else {
			dst[k] = mk(n)
		}
	}
	return dst
}

// release notes that one run of key k's entry ended; the last one drops the entry.
func release[E counted](m map[string]E, k string) {
	if e, ok := m[k]; ok {
		n := e.runsLeft()
		if *n--; *n <= 0 {
			delete(m, k)
		}
	}
}

// done notes that run r of a registered group ended; the last one drops the group's results.
func (m *memo) done(r *RunSpec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[r]
	if !ok {
		return
	}
	delete(m.keys, r)
	release(m.inputs, k.inputs)
	release(m.groups, k.group)
}

// share returns the function that runs r's simulation through the memo, or nil when r's group
// is not registered.
func (m *memo) share(r *RunSpec) shareFunc {
	m.mu.Lock()
	g := m.groups[m.keys[r].group] // none under ""
	m.mu.Unlock()
	if g == nil {
		return nil
	}
	return func(ctx context.Context, key [sha256.Size]byte, run func() (*sim.Result, error)) (*sim.Result, error) {
		m.mu.Lock()
		s, found := g.sims[key]
		if !found {
			s = &memoSim{done: make(chan struct{})}
			g.sims[key] = s
		}
		m.mu.Unlock()
		if found {
			select {
			case <-s.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if s.res == nil {
				// The first run failed (a time limit, say), or looked slowdowns up after all:
				// this run is its own.
				return run()
			}
			m.mu.Lock()
			m.hits++
			m.mu.Unlock()
			return cloneResult(s.res), nil
		}
		res, err := run()
		if err == nil && (g.exact || res.PairLookups == 0 && res.Summary.SharedJobs == 0) {
			s.res = res
			res = cloneResult(res)
		} else {
			m.mu.Lock()
			delete(g.sims, key)
			m.mu.Unlock()
		}
		close(s.done)
		return res, err
	}
}

// shareFunc runs a simulation through the memo under key: run's result, or a copy of an equal
// run's. In a group of runs differing in ξ, a result is handed on only if it looked no slowdown
// up and shared no GPU, which checks what policy.Exclusive promises.
type shareFunc func(ctx context.Context, key [sha256.Size]byte, run func() (*sim.Result, error)) (*sim.Result, error)

// simKey identifies a simulation of an exclusive policy: the jobs and everything of the profile
// but its slowdowns and descriptions (the group fixes the rest of the inputs).
func simKey(jobs []trace.Job, prof *profile.Table) ([sha256.Size]byte, error) {
	h := sha256.New()
	var b []byte
	for _, j := range jobs {
		b = b[:0]
		for _, x := range []int64{int64(j.ID), int64(j.Submit), int64(j.GPUs), j.Iters, int64(j.Batch), int64(j.IterTime), int64(j.Line), int64(len(j.Model))} {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
		h.Write(append(b, j.Model...))
	}
	if prof != nil {
		c := *prof
		c.Pairs, c.Notes, c.Source, c.Provenance = nil, nil, "", profile.Provenance{}
		if err := c.Write(h); err != nil {
			return [sha256.Size]byte{}, fmt.Errorf("bench: profile key: %w", err)
		}
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key, nil
}

// cloneResult copies what callers change of a shared result.
func cloneResult(r *sim.Result) *sim.Result {
	c := *r
	c.Jobs = slices.Clone(r.Jobs)
	c.Util = slices.Clone(r.Util)
	c.Summary.Notes = slices.Clone(r.Summary.Notes)
	c.Summary.ByModel = slices.Clone(r.Summary.ByModel)
	c.Summary.ByGPUs = slices.Clone(r.Summary.ByGPUs)
	return &c
}
