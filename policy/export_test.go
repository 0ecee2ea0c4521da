package policy

// SetMinDueCap sets the deadline-cleaning threshold of tiresias-entry-order for a test and
// returns the function that restores it.
func SetMinDueCap(n int) (restore func()) {
	old := minDueCap
	minDueCap = n
	return func() { minDueCap = old }
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
