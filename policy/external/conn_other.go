//go:build !unix

package external

import "errors"

func openFDs(r, w int) (*conn, error) {
	return nil, errors.New("fds: inherited file descriptors need a Unix system")
}
