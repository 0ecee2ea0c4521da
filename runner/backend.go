package runner

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sharebench/sharebench/dispatch"
)

// Mount is a bind mount for container backends.
type Mount struct {
	Host      string `json:"host"`
	Container string `json:"container"`
	ReadOnly  bool   `json:"read_only"`
}

// Spec describes one workload process. The runner builds it; a Backend turns it into a
// process (local), a container (docker, podman) or a fake workload.
type Spec struct {
	// Name is unique per process (also the container name); dispatch.SafeName must accept it.
	Name string
	// Program is the entry command: [python, script] locally, [python, /opt/sharebench/train.py]
	// inside a container. The fake backend replaces it.
	Program []string
	// Args are the workload flags (train.py's interface, workloads/README.md).
	Args []string
	// Env is extra environment (PYTHONUNBUFFERED, OMP_NUM_THREADS, ...).
	Env map[string]string
	// GPUs are device indices or UUIDs (CUDA_VISIBLE_DEVICES, --gpus); empty for CPU runs.
	GPUs []string
	// Mounts are bind mounts (container backends only).
	Mounts []Mount
	// Workdir is the working directory ("" inherits; inside the container for containers).
	Workdir string
	// Image is the container image (container backends only).
	Image string
	// Isolate asks for time-slicing isolation from MPS: a fresh, empty
	// CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY for this process.
	Isolate bool
	// RunDir is a scratch directory shared by the processes of one run (the fake backend
	// coordinates co-located fakes through it).
	RunDir string
}

// Exit is how a workload process ended.
type Exit struct {
	// Code is the exit status, or -1 when a signal ended the process.
	Code int `json:"code"`
	// Signal names the signal that ended the process ("" if none).
	Signal string `json:"signal,omitempty"`
}

// String describes e: "exit code 1" or "killed by signal killed".
func (e Exit) String() string {
	if e.Signal != "" {
		return "killed by signal " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// A Process is one started workload with raw pipes; the runner parses its stdout.
type Process interface {
	// Stdin receives protocol commands ("go\n", "stop\n"); closing it means stop.
	Stdin() io.WriteCloser
	// Stdout carries the protocol stream; Stderr the workload's log.
	Stdout() io.Reader
	Stderr() io.Reader
	// Wait blocks until the process has exited and returns how. It may be called from one
	// goroutine only, once; stdout and stderr may still hold unread data afterwards.
	Wait() (Exit, error)
	// Terminate asks the process (its whole process group, or its container) to stop with
	// SIGTERM and kills it with SIGKILL if it is still there after grace. It does not block.
	Terminate(grace time.Duration)
	// Close releases the parent's ends of the pipes; pending reads return errors.
	Close() error
}

// A Backend starts workload processes: Local (os/exec), ContainerBackend (docker or podman
// CLI) and Fake (the Go fake workload as a child process). All of them produce real
// processes with real pipes, so one code path measures them all.
type Backend interface {
	// Name is "local", "docker", "podman" or "fake".
	Name() string
	// Probe checks that the backend can start processes here.
	Probe(ctx context.Context) error
	// Start starts one process. Errors mean the process could not be started at all.
	Start(ctx context.Context, s Spec) (Process, error)
}

// checkSpec validates the parts of s that reach command lines.
func checkSpec(s Spec) error {
	if !dispatch.SafeName(s.Name) {
		return fmt.Errorf("runner: process name %q: use letters, digits, '.', '_' and '-'", s.Name)
	}
	if len(s.Program) == 0 || s.Program[0] == "" {
		return fmt.Errorf("runner: %s: empty program", s.Name)
	}
	for k := range s.Env {
		if !safeEnvKey(k) {
			return fmt.Errorf("runner: %s: environment variable name %q", s.Name, k)
		}
	}
	for _, g := range s.GPUs {
		if !dispatch.SafeName(g) {
			return fmt.Errorf("runner: %s: GPU %q is not an index or UUID", s.Name, g)
		}
	}
	for _, m := range s.Mounts {
		if strings.ContainsAny(m.Host+m.Container, ":,\n") || !strings.HasPrefix(m.Container, "/") || !strings.HasPrefix(m.Host, "/") {
			return fmt.Errorf("runner: %s: mount %s:%s: paths must be absolute and free of ':' and ','", s.Name, m.Host, m.Container)
		}
	}
	return nil
}
