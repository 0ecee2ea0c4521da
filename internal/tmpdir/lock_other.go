//go:build !unix

package tmpdir

import (
	"errors"
	"os"
)

// lock cannot tell live directories from stale ones without flock: it claims every directory
// for Create and none for Clean, so that Clean never removes anything.
func lock(_ *os.File, wait bool) error {
	if wait {
		return nil
	}
	return errors.New("tmpdir: no file locks on this system")
}
