package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sharebench/sharebench/runner"
)

// cmdInternal dispatches hidden helpers: "sharebench internal fake-workload [train.py flags]"
// is the fake workload of RUNNER.md §7.3 (protocol v1 on stdout/stdin), used by the fake
// backend and inside test containers.
func cmdInternal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("internal: want a helper name (fake-workload)")
	}
	switch args[0] {
	case "fake-workload":
		if code := runner.FakeWorkload(args[1:], os.Stdin, stdout, stderr, os.Getenv); code != 0 {
			os.Exit(code) // the exit code is the protocol (3 = out of memory)
		}
		return nil
	}
	return fmt.Errorf("internal: unknown helper %q", args[0])
}
