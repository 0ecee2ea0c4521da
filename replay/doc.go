// Package replay runs a job trace for real: the same policy object the simulator uses decides,
// through the simulator's own live engine (sim.Live), which workload processes start, share a
// GPU and stop, while the clock and the progress come from a World (docs/replay.md).
//
// Worlds: Procs runs real workload processes through a runner.Backend (local processes,
// containers, Slurm job steps, the fake workload) on the wall clock and counts their step
// reports; Virtual progresses exactly as the profile says in virtual time, so a replay against it
// must reproduce sim.Run decision for decision (the test that the two code paths agree). The
// package also derives the shipped replay trace (ReplayRule).
package replay
