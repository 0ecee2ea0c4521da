// Package sim replays a job trace on a simulated GPU cluster under a scheduling policy.
//
// The engine is a single-threaded discrete-event simulation in continuous time: events (arrivals,
// completions, policy wake-ups, periodic ticks) are ordered by (time, sequence), times are integer
// nanoseconds, and jobs progress at 1/(t_solo·ξ) iterations per second, ξ being the largest
// slowdown among the jobs sharing any of their GPUs. It checks its invariants and rejects illegal
// plans. Equal inputs give byte-identical results and decision logs; nothing reads a clock.
package sim
