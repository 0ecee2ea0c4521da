//go:build linux

package runner

import "syscall"

// setPdeathsig asks for SIGKILL when the parent dies. The kernel ties it to the thread that
// forked; the Go runtime keeps its threads (sharebench never locks goroutines to threads), so
// it fires when the runner exits.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
