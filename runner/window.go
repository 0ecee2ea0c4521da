package runner

// Step is the timing of one optimizer step as the workload reported it.
type Step struct {
	T0Ns, T1Ns int64
	// StepMs is the workload's own step_ms (for the harness-overhead check).
	StepMs  float64
	Samples int
}

// Ms returns the step's duration from its timestamps, in milliseconds.
func (s Step) Ms() float64 { return float64(s.T1Ns-s.T0Ns) / 1e6 }

// OverlapWindow returns the window in which all jobs ran: from the latest
// first-step start to the earliest last-step end. ok is false when a job has no steps or the
// jobs never overlapped. With one job it is that job's span.
func OverlapWindow(jobs [][]Step) (lo, hi int64, ok bool) {
	if len(jobs) == 0 {
		return 0, 0, false
	}
	for i, steps := range jobs {
		if len(steps) == 0 {
			return 0, 0, false
		}
		first, last := steps[0].T0Ns, steps[len(steps)-1].T1Ns
		if i == 0 || first > lo {
			lo = first
		}
		if i == 0 || last < hi {
			hi = last
		}
	}
	return lo, hi, lo < hi
}

// InWindow keeps the steps lying entirely inside [lo, hi] and then drops trim steps at each
// end (the default trim is 2).
func InWindow(steps []Step, lo, hi int64, trim int) []Step {
	var kept []Step
	for _, s := range steps {
		if s.T0Ns >= lo && s.T1Ns <= hi {
			kept = append(kept, s)
		}
	}
	if len(kept) <= 2*trim {
		return nil
	}
	return kept[trim : len(kept)-trim]
}

// MeetsWindow reports whether a job's kept steps satisfy the rule: at least FloorSteps
// steps, and at least MinSteps steps or MinSeconds seconds.
func MeetsWindow(kept []Step, w Window) bool {
	n := len(kept)
	if n == 0 || n < w.FloorSteps {
		return false
	}
	if n >= w.MinSteps {
		return true
	}
	span := float64(kept[n-1].T1Ns-kept[0].T0Ns) / 1e9
	return span >= w.MinSeconds
}

// WindowSatisfied reports whether every job meets the rule inside the current overlap
// window. The runner stops a run as soon as it does.
func WindowSatisfied(jobs [][]Step, w Window) bool {
	lo, hi, ok := OverlapWindow(jobs)
	if !ok {
		return false
	}
	for _, steps := range jobs {
		if !MeetsWindow(InWindow(steps, lo, hi, w.Trim), w) {
			return false
		}
	}
	return true
}

// KeepsSteps reports whether every job keeps at least one step inside the current overlap
// window after trimming. max_seconds ends a run only then: a run stopped earlier could only
// fail ("no steps left in the window"), however slow its steps were.
func KeepsSteps(jobs [][]Step, trim int) bool {
	lo, hi, ok := OverlapWindow(jobs)
	if !ok {
		return false
	}
	for _, steps := range jobs {
		if len(InWindow(steps, lo, hi, trim)) == 0 {
			return false
		}
	}
	return true
}
