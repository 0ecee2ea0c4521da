package walk

import "github.com/sharebench/sharebench/policy"

// CheckReplacedDeadlines makes tiresias-entry-order keep the deadlines it replaces and panic
// if one would fire when it comes due, for a test; it returns the function that restores it.
func CheckReplacedDeadlines() (restore func()) {
	checkReplaced = true
	return func() { checkReplaced = false }
}

// greedyOf returns the walk of a policy on greedy, or nil.
func greedyOf(p policy.Policy) *greedy {
	switch p := p.(type) {
	case *FIFO:
		return &p.g
	case *SJF:
		return &p.g
	case *SJFBSBF:
		return &p.g
	case *SJFFFS:
		return &p.g
	case *TiresiasEntry:
		return &p.g
	}
	return nil
}

// SettledSkips returns how many calls of p the settled shortcut answered (settled.go); only
// the policies whose walks settle take it.
func SettledSkips(p policy.Policy) int {
	if g := greedyOf(p); g != nil {
		return g.skips
	}
	return 0
}

// EarlyFixed returns how many running jobs fixEarly left in place over p's calls, and how many
// running jobs of its ranges attempts passed in bulk (earlySkip; settled.go).
func EarlyFixed(p policy.Policy) (fixed, skipped int) {
	if g := greedyOf(p); g != nil {
		return g.fixed, g.earlySkips
	}
	return 0, 0
}

// RemSettled returns, for sjf's settled shortcut (settled_rem.go), how many calls walked because
// the packing's order changed or because a key changed its form, and how many jobs of a packing
// the shortcut left in place.
func RemSettled(p policy.Policy) (reordered, rounded, packed int) {
	if g := greedyOf(p); g != nil {
		return g.rem.reordered, g.rem.rounded, g.rem.packed
	}
	return 0, 0, 0
}

// CheckLazy makes sjf check its sets of lazy victims' nodes at every change and panic if one
// is off; it returns the function that restores it.
func CheckLazy() (restore func()) {
	checkLazy = true
	return func() { checkLazy = false }
}

// LazyVictims returns how many of sjf's lazy victims went back without a release, and by cause
// how many times lazy victims were released for real (lazyvictims.go).
func LazyVictims(p policy.Policy) (backs int, mats [3]int) {
	if g := greedyOf(p); g != nil {
		return g.lz.backs, g.lz.mats
	}
	return 0, [3]int{}
}

// WalkMerges returns how many walks of p merged the families, how many of those merged at
// their first skip (soonWalks), and how many families prune dropped from the merge's heap, for
// the policies on greedy.
func WalkMerges(p policy.Policy) (merges, soon, pruned int) {
	if g := greedyOf(p); g != nil {
		return g.merges, g.soonMerges, g.pruned
	}
	return 0, 0, 0
}

// SetMovedCap bounds the log of changed GPUs at n entries (movedCap), for a test; it returns the
// function that restores the bound.
func SetMovedCap(n int) (restore func()) {
	old := movedCap
	movedCap = n
	return func() { movedCap = old }
}

// MovedCompactions returns how many times p's walk dropped the older entries of its log of
// changed GPUs.
func MovedCompactions(p policy.Policy) int {
	if g := greedyOf(p); g != nil {
		return g.compacted
	}
	return 0
}

// MaxMoved is maxMoved, the entries the log of changed GPUs keeps when it drops the rest.
const MaxMoved = maxMoved
