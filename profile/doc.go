// Package profile holds the hardware facts the simulator may use: solo step times per model,
// (global batch, sub-batch) and GPU count, memory per GPU, restart costs, and the pairwise
// slowdowns ξ of co-located jobs under time-slicing or MPS.
//
// A Table is plain data with a documented, versioned JSON form (docs/profile-format.md). It is
// written by the runner (measured) or by the importers (public data); the simulator only reads it.
// The package does no scheduling and reads no clocks.
package profile
