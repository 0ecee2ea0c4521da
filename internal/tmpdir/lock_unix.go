//go:build unix

package tmpdir

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on f, waiting for it when wait is set. Without wait it fails
// at once when another process holds the lock.
func lock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
