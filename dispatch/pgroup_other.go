//go:build !unix

package dispatch

import "os/exec"

// detach leaves cmd as it is: without process groups there is no group-wide interrupt to
// escape, and cancelling kills the command itself.
func detach(*exec.Cmd) {}
