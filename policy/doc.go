// Package policy is the contract between the simulator and scheduling policies: what a policy
// sees at a scheduling instant (State, with the pending Queue, the Jobs, the cluster and the
// profile's slowdowns in Env), what it returns (Plan), the declaration of a policy of the
// authors' loop (Greedy, with its Placer and Hooks), and Registry, which builds policies from
// specs.
//
// A policy is a decision function: given a State it returns a Plan of jobs to stop and jobs to
// start where. It may place tentatively on State.Cluster (the engine rolls those changes back and
// then applies the plan itself). Policies do no I/O, read no clocks and use no globals or
// randomness. The built-in rules are in package schedulers, their executors in package walk, and
// their registry in package builtin; docs/writing-a-policy.md shows how to write one.
package policy
