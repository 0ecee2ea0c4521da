// Package tmpdir creates temporary directories that a later run can tell apart from live ones.
//
// A command writes its output into a temporary directory next to the final one and renames it
// into place when done, so that a failure never leaves a half-written output. A SIGKILL (or a
// power cut) cannot be caught, though, and leaves the temporary directory behind. Each one is
// therefore held locked (flock) by the process writing it for as long as it lives; the kernel
// drops the lock when the process dies, however it dies. Create removes the unlocked leftovers
// of earlier runs with the same prefix before it makes a new one, and never touches a directory
// that a live process is still writing.
package tmpdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a temporary directory held locked by this process.
type Dir struct {
	path string
	lock *os.File // the directory itself, opened and flocked
}

// Create removes the stale directories parent/prefix* that no live process holds, then creates
// and locks a new parent/prefix<random> with mode 0755.
func Create(parent, prefix string) (*Dir, error) {
	if err := Clean(parent, prefix); err != nil {
		return nil, err
	}
	for range 10 {
		p, err := os.MkdirTemp(parent, prefix)
		if err != nil {
			return nil, err
		}
		f, err := os.Open(p)
		if err != nil {
			os.Remove(p)
			return nil, err
		}
		if err := lock(f, true); err != nil {
			f.Close()
			os.Remove(p)
			return nil, err
		}
		// A concurrent Clean may have removed the directory between MkdirTemp and the lock;
		// then the path is gone (or is another directory) and we start again.
		fi, err1 := f.Stat()
		pi, err2 := os.Lstat(p)
		if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			f.Close()
			continue
		}
		// MkdirTemp creates mode 0700; output directories are 0755 like every other.
		if err := os.Chmod(p, 0o755); err != nil {
			f.Close()
			os.RemoveAll(p)
			return nil, err
		}
		return &Dir{path: p, lock: f}, nil
	}
	return nil, fmt.Errorf("%s: could not create a temporary directory %s*", parent, prefix)
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Release drops the lock, once the directory has been renamed into place (the lock follows the
// directory, not its name) or removed.
func (d *Dir) Release() {
	if d.lock != nil {
		d.lock.Close()
		d.lock = nil
	}
}

// Remove deletes the directory and its contents, then releases it.
func (d *Dir) Remove() error {
	err := os.RemoveAll(d.path)
	d.Release()
	return err
}

// Clean removes every directory parent/prefix* that no live process holds locked. Entries
// that are not directories are left alone.
func Clean(parent, prefix string) error {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		f, err := os.Open(p)
		if err != nil {
			continue // removed meanwhile, or not ours to read
		}
		// Remove while holding the lock, so that a Create that opened the directory before
		// the removal finds it gone once it gets the lock.
		if lock(f, false) == nil {
			os.RemoveAll(p)
		}
		f.Close()
	}
	return nil
}
