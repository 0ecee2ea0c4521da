//go:build unix

package external

import (
	"fmt"
	"os"
	"syscall"
)

// openFDs speaks the protocol on inherited file descriptors: replies are read from r,
// messages written to w. They are made non-blocking so that deadlines apply.
func openFDs(r, w int) (*conn, error) {
	for _, fd := range []int{r, w} {
		if err := syscall.SetNonblock(fd, true); err != nil {
			return nil, fmt.Errorf("fd %d: %w", fd, err)
		}
	}
	in := os.NewFile(uintptr(r), fmt.Sprintf("fd %d", r))
	out := os.NewFile(uintptr(w), fmt.Sprintf("fd %d", w))
	return &conn{in: in, out: out, r: newReader(in)}, nil
}
