package policy

// CheckReplacedDeadlines makes tiresias-entry-order keep the deadlines it replaces and panic
// if one would fire when it comes due, for a test; it returns the function that restores it.
func CheckReplacedDeadlines() (restore func()) {
	checkReplaced = true
	return func() { checkReplaced = false }
}

// SettledSkips returns how many calls of p the settled shortcut answered (settled.go), for the
// policies that take it.
func SettledSkips(p Policy) int {
	switch p := p.(type) {
	case *FIFO:
		return p.g.skips
	case *TiresiasEntry:
		return p.g.skips
	}
	return 0
}

// EarlyFixed returns how many running jobs fixEarly left in place over p's calls (settled.go).
func EarlyFixed(p Policy) int {
	switch p := p.(type) {
	case *FIFO:
		return p.g.fixed
	case *TiresiasEntry:
		return p.g.fixed
	}
	return 0
}

// WalkMerges returns how many walks of p merged the families and how many families prune
// dropped from the merge's heap, for the policies on greedy.
func WalkMerges(p Policy) (merges, pruned int) {
	var g *greedy
	switch p := p.(type) {
	case *FIFO:
		g = &p.g
	case *SJF:
		g = &p.g
	case *SJFBSBF:
		g = &p.g
	case *SJFFFS:
		g = &p.g
	case *TiresiasEntry:
		g = &p.g
	default:
		return 0, 0
	}
	return g.merges, g.pruned
}
