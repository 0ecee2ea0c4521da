//go:build unix

package runner

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// processSignal is a signal the runner sends to process groups.
type processSignal = syscall.Signal

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// newProcessGroupAttr puts the child in a new process group led by itself and, on Linux, has
// the kernel SIGKILL it when the runner dies (a kill -9 of "profile run" must not leave a
// workload holding GPU memory).
func newProcessGroupAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(a)
	return a
}

// signalGroup signals every process in the group led by pid (ESRCH when it is empty is fine).
func signalGroup(pid int, sig processSignal) {
	if pid > 0 {
		_ = unix.Kill(-pid, sig)
	}
}

// waitExited blocks until pid has exited, leaving it unreaped (a zombie), so its process
// group id cannot be reused while the runner signals the group.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// exitOf converts a process state into an Exit.
func exitOf(ps *os.ProcessState) Exit {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal().String()}
	}
	return Exit{Code: ps.ExitCode()}
}
