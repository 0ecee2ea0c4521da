// Package cluster models GPU occupancy: which jobs sit on which GPUs, how much memory is free,
// and how many distinct jobs each node hosts. It is pure data with invariants and an undo log
// for tentative placement; it holds no scheduling logic and reads no clocks.
package cluster
