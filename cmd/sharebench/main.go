// Command sharebench profiles GPU-sharing interference, simulates schedulers on job traces and
// reproduces the SJF-BSBF paper's experiments. Run "sharebench help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
