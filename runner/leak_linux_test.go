//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// leakedChildren lists live (non-zombie) processes whose parent is this test process.
func leakedChildren() string {
	me := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[1] == me && f[0] != "Z" {
			out = append(out, e.Name()+" "+s[:i+1])
		}
	}
	return strings.Join(out, "\n")
}
