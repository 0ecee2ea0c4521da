package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/sharebench/sharebench/dispatch"
)

// ContainerBackend runs each workload process in its own container through the docker or
// podman CLI: "run --rm --init -i --name N --ipc=host --network=none",
// GPUs by --gpus '"device=N"' (docker) or CDI --device nvidia.com/gpu=N (podman), the
// workloads directory mounted read-only. The argv is built as a []string and never passes
// through a shell; names are checked against a safe charset as well. A pair is two
// containers on the same device.
type ContainerBackend struct {
	// Engine is "docker" or "podman".
	Engine string
	// Binary is the CLI to run (default: Engine, looked up in $PATH).
	Binary string
	// Runtime and Ulimits add --runtime and --ulimit flags (podman in restricted sandboxes).
	Runtime string
	Ulimits []string
	// Control runs control commands (rm -f, kill); default exec with a 30 s timeout.
	Control func(ctx context.Context, argv []string) error
	// Environ returns the CLI's environment (default os.Environ).
	Environ func() []string
}

// ErrNoInit reports a container engine that cannot start containers with --init: podman
// without its init binary (catatonit, a package podman only recommends).
var ErrNoInit = errors.New("cannot start containers with --init")

// NewContainerBackend returns the backend for a campaign's container settings.
func NewContainerBackend(cfg ContainerConfig) *ContainerBackend {
	return &ContainerBackend{Engine: cfg.Engine, Runtime: cfg.Runtime, Ulimits: slices.Clone(cfg.Ulimits)}
}

// Name returns the engine name.
func (b *ContainerBackend) Name() string { return b.Engine }

func (b *ContainerBackend) binary() string {
	if b.Binary != "" {
		return b.Binary
	}
	return b.Engine
}

// Probe runs "<engine> info" and, for podman, checks that it can start containers with
// --init (probeInit).
func (b *ContainerBackend) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.binary(), "info")
	cmd.Env = b.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("runner: %s info: %w: %s", b.Engine, err, strings.TrimSpace(tailString(string(out), 500)))
	}
	if b.Engine == "podman" {
		return b.probeInit(ctx)
	}
	return nil
}

// probeInit checks that podman finds the init binary that --init runs as each container's
// PID 1 (it forwards signals and reaps the workload's orphans): podman without catatonit, which
// it only recommends, refuses every such container. Podman looks the binary up when it creates
// a container, so the check creates and removes one of an empty root file system: nothing runs
// and no image is needed. Docker's daemon looks docker-init up only when a container starts,
// so docker is not checked; a create that fails for another reason is left to the runs.
func (b *ContainerBackend) probeInit(ctx context.Context) error {
	root, err := os.MkdirTemp("", "sharebench-preflight-")
	if err != nil {
		return fmt.Errorf("runner: %s preflight: %w", b.Engine, err)
	}
	defer os.RemoveAll(root)
	name := "sb-preflight-" + nonce()
	argv := []string{b.binary(), "create", "--init", "--network=none", "--name", name}
	if b.Runtime != "" {
		argv = append(argv, "--runtime", b.Runtime)
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "--rootfs", root, "/sharebench-preflight")...)
	cmd.Env = b.environ()
	out, err := cmd.CombinedOutput()
	if err == nil {
		b.control([]string{b.binary(), "rm", "-f", name})
		return nil
	}
	if msg := strings.TrimSpace(string(out)); strings.Contains(msg, "init binary") {
		return fmt.Errorf("runner: %s %w, which the container backend needs to reap the workloads' processes: install catatonit (the init binary podman recommends) or set init_path in containers.conf (%s)",
			b.Engine, ErrNoInit, strings.Join(strings.Fields(tailString(msg, 300)), " "))
	}
	return nil
}

// Argv returns the full command line that runs s (golden-tested).
func (b *ContainerBackend) Argv(s Spec) ([]string, error) {
	if err := checkSpec(s); err != nil {
		return nil, err
	}
	if b.Engine != "docker" && b.Engine != "podman" {
		return nil, fmt.Errorf("runner: container engine %q: want docker or podman", b.Engine)
	}
	if !safeImage(s.Image) {
		return nil, fmt.Errorf("runner: %s: image %q is not a plain image reference", s.Name, s.Image)
	}
	argv := []string{b.binary(), "run", "--rm", "--init", "-i", "--name", s.Name, "--ipc=host", "--network=none"}
	if b.Runtime != "" {
		if !dispatch.SafeName(b.Runtime) {
			return nil, fmt.Errorf("runner: container runtime %q", b.Runtime)
		}
		argv = append(argv, "--runtime", b.Runtime)
	}
	for _, u := range b.Ulimits {
		if !safeUlimit(u) {
			return nil, fmt.Errorf("runner: ulimit %q: want name=soft[:hard]", u)
		}
		argv = append(argv, "--ulimit", u)
	}
	if len(s.GPUs) > 0 {
		if b.Engine == "docker" {
			argv = append(argv, "--gpus", `"device=`+strings.Join(s.GPUs, ",")+`"`)
		} else {
			for _, g := range s.GPUs {
				argv = append(argv, "--device", "nvidia.com/gpu="+g)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		argv = append(argv, "-e", k+"="+s.Env[k])
	}
	for _, m := range s.Mounts {
		v := m.Host + ":" + m.Container
		if m.ReadOnly {
			v += ":ro"
		}
		argv = append(argv, "-v", v)
	}
	if s.Workdir != "" {
		if !strings.HasPrefix(s.Workdir, "/") {
			return nil, fmt.Errorf("runner: %s: container workdir %q must be absolute", s.Name, s.Workdir)
		}
		argv = append(argv, "-w", s.Workdir)
	}
	argv = append(argv, s.Image)
	argv = append(argv, s.Program...)
	return append(argv, s.Args...), nil
}

// Start runs the CLI as a local child (its stdin, stdout and stderr are the container's).
// Terminating it stops the container ("kill --signal TERM", then "rm -f" after the grace
// period); after exit the container is removed with "rm -f" in any case, since killing the
// CLI does not reliably stop the container.
func (b *ContainerBackend) Start(_ context.Context, s Spec) (Process, error) {
	argv, err := b.Argv(s)
	if err != nil {
		return nil, err
	}
	p, err := startProcess(s.Name, argv, "", mergeEnv(b.environ(), nil))
	if err != nil {
		return nil, err
	}
	rm := func() { b.control([]string{b.binary(), "rm", "-f", s.Name}) }
	p.onWait = rm
	p.terminate = func(grace time.Duration) {
		go func() {
			b.control([]string{b.binary(), "kill", "--signal", "TERM", s.Name})
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-p.done:
			case <-t.C:
				rm()
				p.signal(sigKill)
			}
		}()
	}
	return p, nil
}

func (b *ContainerBackend) environ() []string {
	if b.Environ != nil {
		return b.Environ()
	}
	return os.Environ()
}

// control runs a control command, ignoring "no such container" style failures.
func (b *ContainerBackend) control(argv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b.Control != nil {
		_ = b.Control(ctx, argv)
		return
	}
	// Failures ("no such container" after --rm removed it) are expected and harmless.
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = b.environ()
	_ = cmd.Run()
}

// tailString returns the last n bytes of s.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
