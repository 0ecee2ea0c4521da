// Package walk carries out the declarations of policies of the authors' loop (policy.Greedy).
//
// Reference is the plain executor: at every call it walks every waiting job, and every job it
// stops, in rank order, exactly as policy.Greedy describes, and checks what the declaration
// states about itself. It defines what a declaration means.
//
// Fast makes the same decisions with shortcuts that it proves futile work away: which of them
// apply is decided in one function, shortcuts, from what the declaration states, and the
// differential tests (sim/reference_test.go) require its decision logs to equal Reference's
// byte for byte. FastTiresias is the fast form of Muri's dlas-gpu (schedulers.Tiresias). The
// files other than reference.go, fast.go and placements.go hold that machinery; each explains
// why its shortcut changes no decision, and docs/simulator.md ("Speed") gives the overview.
package walk
