// Package trace reads, writes and generates job traces: the immutable job specifications
// ([Job]) that the simulator replays. Readers cover sharebench's canonical CSV and the Muri,
// Tiresias and Philly dialects; each converts its units to [time.Duration] exactly once and
// reports malformed input as a positioned [*SyntaxError]. [Generate] builds synthetic traces
// from a seeded generator supplied by the caller.
//
// The package schedules nothing, reads no clock, uses no global random source and performs
// no I/O beyond the readers and writers it is given (and [ReadFile]).
package trace
