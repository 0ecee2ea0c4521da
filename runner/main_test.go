package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"testing"
)

// Test-binary modes. The runner tests start real child processes by re-executing the test
// binary: SHAREBENCH_TEST_MODE=fake-workload makes it the fake workload (the fake backend's
// child), and TestHelperWorkload plays scripted protocol streams for the local backend.
const envTestMode = "SHAREBENCH_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(envTestMode) {
	case "fake-workload":
		os.Exit(FakeWorkload(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
	case "run-campaign":
		os.Exit(runCampaignMain())
	case "kube-dispatch":
		os.Exit(kubeDispatchMain())
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedChildren(); leaked != "" {
			fmt.Fprintln(os.Stderr, "runner tests: child processes left behind:\n"+leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// runCampaignMain plays "sharebench profile run": it runs the campaign file
// $SHAREBENCH_TEST_CAMPAIGN into $SHAREBENCH_TEST_OUT with the fake backend (children are this
// binary), so that tests can kill -9 a runner.
func runCampaignMain() int {
	c, err := LoadCampaign(os.Getenv("SHAREBENCH_TEST_CAMPAIGN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if _, err := Run(context.Background(), c, RunOptions{OutDir: os.Getenv("SHAREBENCH_TEST_OUT"), Backend: fakeBackend(c.Fake)}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// kubeDispatchMain plays "sharebench profile run --backend kubernetes" with the campaign file
// $SHAREBENCH_TEST_CAMPAIGN into $SHAREBENCH_TEST_OUT, handling SIGINT as sharebench does (the
// first one cancels, later ones are caught too), so that tests can interrupt a dispatcher.
func kubeDispatchMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := LoadCampaign(os.Getenv("SHAREBENCH_TEST_CAMPAIGN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if _, err := Dispatch(ctx, c, DispatchOptions{OutDir: os.Getenv("SHAREBENCH_TEST_OUT"), Dispatcher: &Kube{Config: c.Kubernetes, Logger: log}, Logger: log}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fakeBackend returns a Fake backend whose children are this test binary.
func fakeBackend(cfg FakeConfig) *Fake {
	return &Fake{Command: []string{os.Args[0]}, Env: map[string]string{envTestMode: "fake-workload"}, Config: cfg}
}
