package runner

import (
	"fmt"
	"os"
	"testing"
)

// Test-binary modes. The runner tests start real child processes by re-executing the test
// binary: SHAREBENCH_TEST_MODE=fake-workload makes it the fake workload (the fake backend's
// child), and TestHelperWorkload plays scripted protocol streams for the local backend.
const envTestMode = "SHAREBENCH_TEST_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(envTestMode) == "fake-workload" {
		os.Exit(FakeWorkload(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
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

// fakeBackend returns a Fake backend whose children are this test binary.
func fakeBackend(cfg FakeConfig) *Fake {
	return &Fake{Command: []string{os.Args[0]}, Env: map[string]string{envTestMode: "fake-workload"}, Config: cfg}
}
