// Package schedulers holds the decision rules of the built-in policies, one file per scheduler:
// fifo, sjf, sjf-ffs, sjf-bsbf and tiresias-entry-order as declarations of the authors' loop
// (policy.Greedy), and tiresias (Muri's dlas-gpu) as a policy of its own. Each file reads top to
// bottom: the order, the placement, the victims and the sharing rule. They say what to decide;
// package walk carries the declarations out, and package builtin registers them.
package schedulers

// Registry keys of the built-in policies.
const (
	KeyFIFO     = "fifo"
	KeySJF      = "sjf"
	KeyTiresias = "tiresias"
	// KeyTiresiasEntry is 2D-LAS on the authors' physical scheduling loop (TiresiasEntry).
	KeyTiresiasEntry = "tiresias-entry-order"
	KeySJFFFS        = "sjf-ffs"
	KeySJFBSBF       = "sjf-bsbf"
)
