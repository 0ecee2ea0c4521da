//go:build unix

package dispatch

import (
	"os/exec"
	"syscall"
)

// detach puts cmd in a process group of its own, out of reach of the SIGINT a terminal (a
// second Ctrl-C) or "timeout -s INT" sends to sharebench's group, and makes cancelling it
// kill that whole group.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
