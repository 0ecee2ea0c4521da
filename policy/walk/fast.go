package walk

import (
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/profile"
)

// Fast returns an executor of d that makes the plans Reference(d) makes, with the shortcuts that
// what d states allows (shortcuts). Where d states too little for any, it is Reference(d).
func Fast(d *policy.Greedy, opts ...Option) policy.Policy {
	sc, ok := shortcuts(d)
	if !ok {
		return Reference(d)
	}
	o := options{movedCap: 1 << 12}
	for _, f := range opts {
		f(&o)
	}
	if o.noKeptFails {
		sc.keepFails = false
	}
	g := newGreedy(d, sc, o)
	return wrap(d, g.schedule)
}

// Option adjusts the fast executor, for tests.
type Option func(*options)

type options struct {
	noKeptFails bool
	stats       *Stats
	movedCap    int  // see greedy.note
	checkLazy   bool // see lazyvictims.go
}

// NoKeptFailures makes the fast executor try again, at every call, the jobs that failed in an
// earlier one: the same plans and profile lookups, slower.
func NoKeptFailures() Option { return func(o *options) { o.noKeptFails = true } }

// WithStats makes the fast executor count in st how often its shortcuts answered.
func WithStats(st *Stats) Option { return func(o *options) { o.stats = st } }

// Stats counts how often the fast executor's shortcuts answered: tests check that the cases they
// build reach the shortcut they test.
type Stats struct {
	Settled      int    // calls answered without a walk (settled.go, settled_rem.go)
	EarlyFixed   int    // running jobs fixEarly left in place (settled.go)
	EarlySkipped int    // running jobs of fixEarly's ranges that attempts passed in bulk
	Reordered    int    // sjf's settled calls that walked because the packing's order changed
	Rounded      int    // ... because a key changed its form
	Packed       int    // jobs of a packing sjf's settled shortcut left in place
	Merges       int    // walks that merged the families (greedy.merge)
	SoonMerges   int    // of those, walks that merged at their first skip
	Pruned       int    // families prune dropped from the merge's heap
	Compactions  int    // times the log of changed GPUs dropped its older entries
	LazyBacks    int    // lazy victims that went back without a release
	LazyReleases [3]int // times lazy victims were released for real, by cause
}

// shortcutSet is what the fast walk may rely on for a declaration.
type shortcutSet struct {
	placement placement
	// exclusive: placements never share, so a job needs idle GPUs.
	exclusive bool
	// bySize: whether a job can be placed depends only on its GPU count, and a larger job never
	// fits where a smaller one does not (YARN).
	bySize bool
	// timeless: keys and placements do not change with time, so a walk that changed nothing is
	// not repeated until something changes.
	timeless bool
	// drain: running jobs rank by their remaining times, which the running set bounds by their
	// finish times (runset.go).
	drain bool
	// settled and remSettled: a call after a walk that left the cluster settled is answered
	// without a walk where that provably changes nothing (settled.go, settled_rem.go).
	settled, remSettled bool
	// lazy: victims are stopped on paper until that could change a decision (lazyvictims.go).
	lazy bool
	// keepFails: failures are carried across calls (greedy.fails).
	keepFails bool
	// index: the share index finds SJF-BSBF's partners (shareindex.go).
	index bool
}

// placement is the fast placement of a declaration.
type placement int

const (
	// placeRule calls the declaration's Place.
	placeRule placement = iota
	placeYARN
	placeFirstFit
	placeBestBenefit
)

// shortcuts decides, from what d states, which of the fast walk's shortcuts apply; ok is false
// when the walk's own assumptions are not known to hold (a placement it does not know, or
// preemption with ranks it cannot bound), and then none does.
//
// The walk passes over the rest of a family (jobs with the same options and GPU count) after one
// of its jobs failed, until the cluster changes. That holds for YARN, whose answer depends on the
// GPU count alone, for first fit, which reads no remaining time, and for the share check when
// the family's jobs come in order of remaining time (t_con − t_seq only grows with the pending
// job's remaining time); with preemption the running set needs ranks that are fixed or remaining
// times.
func shortcuts(d *policy.Greedy) (sc shortcutSet, ok bool) {
	authors := d.Victims != policy.VictimsTentative
	switch p := d.Place.(type) {
	case schedulers.YARN:
		sc.placement, sc.exclusive, sc.bySize = placeYARN, true, true
	case schedulers.FirstFit:
		sc.placement = placeFirstFit
		if p.Consolidate {
			sc.placement = placeRule
		}
		sc.keepFails = !d.Preempt && !p.Consolidate
	case schedulers.BestBenefit:
		if d.Order != policy.OrderRemaining {
			return shortcutSet{}, false
		}
		sc.placement = placeBestBenefit
		if p.Consolidate {
			sc.placement = placeRule
		}
		sc.keepFails = !d.Preempt && !p.Consolidate
		sc.index = !d.Preempt && !p.Consolidate
	default:
		return shortcutSet{}, false
	}
	if d.Preempt && d.Order == policy.OrderAny {
		return shortcutSet{}, false
	}
	sc.exclusive = sc.exclusive || d.Exclusive
	sc.timeless = sc.bySize && d.Order == policy.OrderFixed
	sc.drain = d.Order == policy.OrderRemaining
	sc.settled = d.Preempt && sc.bySize && sc.timeless && authors
	sc.remSettled = d.Preempt && sc.bySize && sc.drain && authors
	// Stopped jobs of sjf mostly go back where they were (on paper they never leave); fifo's
	// mostly move, and there the bookkeeping costs more than it saves.
	sc.lazy = sc.bySize && sc.drain && authors
	return sc, true
}

// executor is what both executors give the engine: a declaration's name and traits, and its
// scheduling function. The wrappers below add the traits the declaration has (the engine asks
// for them by type).
type executor struct {
	d   *policy.Greedy
	run func(s *policy.State) (policy.Plan, error)
}

func (e *executor) Name() string                                  { return e.d.Name }
func (e *executor) Schedule(s *policy.State) (policy.Plan, error) { return e.run(s) }

type keyed struct{ *executor }

func (k keyed) Key(j *policy.Job) policy.Key { return k.d.Key(j) }

type exclusive struct{ *executor }

func (exclusive) Exclusive() {}

type keyedExclusive struct{ keyed }

func (keyedExclusive) Exclusive() {}

type moded struct{ *executor }

func (m moded) Mode() profile.Mode { return m.d.Mode }

type keyedModed struct{ keyed }

func (m keyedModed) Mode() profile.Mode { return m.d.Mode }

// wrap returns the policy of d that schedules with run.
func wrap(d *policy.Greedy, run func(s *policy.State) (policy.Plan, error)) policy.Policy {
	e := &executor{d: d, run: run}
	k := keyed{e}
	switch {
	case d.Key != nil && d.Exclusive:
		return keyedExclusive{k}
	case d.Key != nil && d.Mode != "":
		return keyedModed{k}
	case d.Key != nil:
		return k
	case d.Exclusive:
		return exclusive{e}
	case d.Mode != "":
		return moded{e}
	}
	return e
}
