// Package external runs a scheduling policy in another process, speaking the versioned
// JSON-lines protocol of docs/external-policy.md on its standard input and output: a hello
// with the cluster and the profile's slowdowns, then at every scheduling instant the changes
// to the State since the previous instant, answered by a Plan. The engine validates every plan
// as for the built-in policies; this package checks it first against the same rules, so that
// an illegal plan, a timeout or a crash of the process ends the run with an error naming the
// instant, the job and the rule.
//
// Register adds the policy key "external" to a registry (package builtin does): the spec
// "external:CMD" runs CMD.
package external
