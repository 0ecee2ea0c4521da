//go:build !unix

package runner

import (
	"os"
	"syscall"
)

// processSignal is a signal the runner sends to processes.
type processSignal = syscall.Signal

// Without process groups or SIGTERM the runner can only kill the child itself.
const (
	sigTerm = syscall.Signal(9)
	sigKill = syscall.Signal(9)
)

func newProcessGroupAttr() *syscall.SysProcAttr { return nil }

func signalGroup(pid int, sig processSignal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(sig)
	}
}

func waitExited(int) {}

func exitOf(ps *os.ProcessState) Exit { return Exit{Code: ps.ExitCode()} }
