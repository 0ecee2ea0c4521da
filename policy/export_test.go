package policy

// SetMinDueCap sets the deadline-cleaning threshold of tiresias-entry-order for a test and
// returns the function that restores it.
func SetMinDueCap(n int) (restore func()) {
	old := minDueCap
	minDueCap = n
	return func() { minDueCap = old }
}
