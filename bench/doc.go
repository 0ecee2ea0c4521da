// Package bench wires traces, profiles, policies and the simulator together: one simulation
// from a spec (used by "sharebench simulate"), and the paper's experiments, declared once with
// labels and run in parallel (used by "sharebench reproduce").
package bench
