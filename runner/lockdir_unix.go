//go:build unix

package runner

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// lockDir takes an exclusive flock on dir/lock and returns the unlock function. If the lock
// file cannot be opened, it returns a no-op (the fake then runs without coordination).
func lockDir(dir string) func() {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return func() {}
	}
	for unix.Flock(int(f.Fd()), unix.LOCK_EX) == unix.EINTR {
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
}

// lockFile takes an exclusive flock on f (the journal) and returns the unlock function.
func lockFile(f *os.File) func() {
	for unix.Flock(int(f.Fd()), unix.LOCK_EX) == unix.EINTR {
	}
	return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }
}
