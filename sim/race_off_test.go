//go:build !race

package sim

// raceOn reports whether the race detector is on (race_on_test.go).
const raceOn = false
