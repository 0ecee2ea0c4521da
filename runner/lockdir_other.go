//go:build !unix

package runner

import "os"

// lockDir is a no-op without flock.
func lockDir(string) func() { return func() {} }

// lockFile is a no-op without flock.
func lockFile(*os.File) func() { return func() {} }
