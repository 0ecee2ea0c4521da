// Package gpu reads device telemetry for the runner: device identity, SM clocks, utilisation,
// memory, power, energy, throttle reasons and compute processes, from NVML (cgo builds only),
// from nvidia-smi, or from a deterministic fake.
//
// Samples are stamped with CLOCK_MONOTONIC (MonotonicNs), the clock behind Python's
// time.monotonic_ns(), so they line up with the workload's step timestamps. The package only
// reads: it never changes compute mode, MIG mode, clocks or power limits, and it never starts
// MPS daemons. Iteration times never come from here; they come from the workload.
//
// NVML rule: after a failed nvml.Init no other NVML function is called, ever.
// Only nvml.go imports go-nvml.
package gpu
