package runner

import "github.com/sharebench/sharebench/engine"

// The cluster engines a campaign can run on ("profile run --backend slurm|kubernetes"): the
// runner's Slurm and Kube dispatchers, built on package engine.
const (
	EngineSlurm      = engine.NameSlurm
	EngineKubernetes = engine.NameKubernetes
)

// SlurmConfig is a campaign's slurm section, the engine's settings.
type SlurmConfig = engine.SlurmConfig
