//go:build unix && !linux

package runner

import "syscall"

// setPdeathsig does nothing where there is no parent-death signal; a resumed campaign still
// stops stale workloads (killTokenProcs, on Linux).
func setPdeathsig(*syscall.SysProcAttr) {}
