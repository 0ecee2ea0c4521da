// Package schedulers holds the decision rules of the built-in policies, one file per scheduler:
// fifo, sjf, sjf-ffs, sjf-bsbf and tiresias-entry-order as declarations of the authors' loop
// (policy.Greedy), and the Muri simulator's rules, which re-decide every job at every event, as
// policies of their own: tiresias (dlas-gpu), tiresias-gittins, srtf and srsf (lineage.go holds
// what they share), antman, themis, and muri-s and muri-l (muri.go, with the matching in matching.go). Each file
// reads top to bottom: the order, the placement, the victims and the
// sharing rule. They say what to decide; package walk carries the declarations out and makes the
// Muri rules' fast forms, and package builtin registers them.
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
	// The Muri simulator's shortest, shortest-gpu and dlas-gpu-gittins.
	KeySRTF            = "srtf"
	KeySRSF            = "srsf"
	KeyTiresiasGittins = "tiresias-gittins"
	// The Muri simulator's antman.
	KeyAntMan = "antman"
	// The Muri simulator's multi-resource-blossom-same-gpu and its -unaware form.
	KeyMuriS = "muri-s"
	KeyMuriL = "muri-l"
	// The Muri simulator's themis.
	KeyThemis = "themis"
)
