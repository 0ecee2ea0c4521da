//go:build race

package sim

// raceOn reports whether the race detector is on: it slows the engine tenfold, and tests skip
// their longest repetitions under it.
const raceOn = true
