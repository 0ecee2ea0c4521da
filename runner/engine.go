package runner

import "github.com/sharebench/sharebench/dispatch"

// The cluster engines a campaign can run on ("profile run --backend slurm|kubernetes"): the
// runner's Slurm and Kube dispatchers, built on package dispatch.
const (
	EngineSlurm      = dispatch.NameSlurm
	EngineKubernetes = dispatch.NameKubernetes
)

// SlurmConfig is a campaign's slurm section, the engine's settings.
type SlurmConfig = dispatch.SlurmConfig
