// Package policy defines the scheduling-policy contract and the built-in policies: fifo, sjf,
// tiresias, sjf-ffs and sjf-bsbf, with their variants (preemptive, consolidating, MPS).
//
// A policy is a decision function: given a State (time, pending and running jobs, the cluster,
// the profile-derived Env) it returns a Plan of jobs to stop and jobs to start where. It may
// place tentatively on State.Cluster (the engine rolls those changes back and then applies the
// plan itself). Policies do no I/O, read no clocks and use no globals or randomness.
package policy
