// Command fakeworkload is the fake workload (protocol v1 from Go) as a small
// standalone binary, equivalent to "sharebench internal fake-workload". Built with
// CGO_ENABLED=0 it is static, so the podman tests put it alone into an image.
package main

import (
	"os"

	"github.com/sharebench/sharebench/runner"
)

func main() {
	os.Exit(runner.FakeWorkload(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
