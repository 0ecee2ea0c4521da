package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sharebench/sharebench/internal/golden"
)

const containerCampaign = `
name: ctr
backend: container
repeats: 1
max_repeats: 1
models: [{name: resnet50, batches: [64], sub_batches: [32]}]
workload: {threads: 4, mem_fraction: 0.3, env: {PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True"}}
container: {image: "nvcr.io/nvidia/pytorch:25.01-py3", workloads_dir: /srv/sharebench/workloads}
gpus: ["3"]
`

// goldenArgv renders an argv one element per line, quoted.
func goldenArgv(argv []string) []byte {
	var b bytes.Buffer
	for _, a := range argv {
		fmt.Fprintf(&b, "%q\n", a)
	}
	return b.Bytes()
}

func TestContainerArgvGolden(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"docker", "podman"} {
		t.Run(engine, func(t *testing.T) {
			c := mustParse(t, containerCampaign+"pairs: [[resnet50, resnet50]]\n")
			c.Container.Engine = engine
			if engine == "podman" {
				c.Container.Runtime, c.Container.Ulimits = "runc", []string{"nofile=1024:1024", "nproc=1024:1024"}
			}
			if err := c.Resolve(); err != nil {
				t.Fatal(err)
			}
			cell := c.Cells()[1]
			rc := &runCtx{c: c, cell: cell, gpus: c.GPUs, token: "ctest"}
			k := &child{role: "B", plan: "r0-pair", m: *cell.B, runID: cell.ID[:8] + "-r0-pair-B"}
			s := rc.spec(k, "/tmp/run")
			s.Name = "sb-" + k.runID + "-000000" // the random suffix, fixed
			argv, err := NewContainerBackend(c.Container).Argv(s)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "container", engine+".argv.golden"), goldenArgv(argv))
		})
	}
}

func TestContainerArgvRejectsUnsafe(t *testing.T) {
	t.Parallel()
	b := &ContainerBackend{Engine: "docker"}
	ok := Spec{Name: "sb-x", Program: []string{"python3"}, Image: "img:1", GPUs: []string{"0"}}
	if _, err := b.Argv(ok); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Spec){
		"name with a space":  func(s *Spec) { s.Name = "sb x" },
		"name as an option":  func(s *Spec) { s.Name = "--privileged" },
		"image with a shell": func(s *Spec) { s.Image = "img;rm -rf /" },
		"gpu list":           func(s *Spec) { s.GPUs = []string{"0,1"} },
		"env key":            func(s *Spec) { s.Env = map[string]string{"A B": "1"} },
		"mount with a colon": func(s *Spec) { s.Mounts = []Mount{{Host: "/a:b", Container: "/c"}} },
		"relative mount":     func(s *Spec) { s.Mounts = []Mount{{Host: "a", Container: "/c"}} },
	} {
		s := ok
		mut(&s)
		if _, err := b.Argv(s); err == nil {
			t.Errorf("%s: Argv accepted %+v", name, s)
		}
	}
	if _, err := (&ContainerBackend{Engine: "lxc"}).Argv(ok); err == nil {
		t.Error("unknown engine accepted")
	}
	// Values are argv elements, never shell text: odd but harmless values pass verbatim.
	s := ok
	s.Env = map[string]string{"X": "$(reboot); `id`"}
	argv, err := b.Argv(s)
	if err != nil || !strings.Contains(strings.Join(argv, "\n"), "X=$(reboot); `id`") {
		t.Errorf("argv %q, err %v", argv, err)
	}
}

// fakeDocker writes a fake docker CLI that logs its argv and, for "run", executes this test
// binary as the fake workload with the arguments after the image and program.
func fakeDocker(t *testing.T, dir string) (bin, logPath string) {
	t.Helper()
	bin, logPath = filepath.Join(dir, "docker"), filepath.Join(dir, "docker.log")
	script := `#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_DOCKER_LOG"
case "$1" in
run)
	while [ $# -gt 0 ]; do
		if [ "$1" = "$FAKE_DOCKER_IMAGE" ]; then shift 2; break; fi
		shift
	done
	exec "$FAKE_DOCKER_WORKLOAD" "$@"
	;;
esac
exit 0
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, logPath
}

func TestContainerControlFlow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, logPath := fakeDocker(t, dir)
	c := mustParse(t, `
name: ctr-flow
backend: container
repeats: 1
max_repeats: 1
models: [{name: ok, batches: [8]}, {name: crashy, batches: [8], args: [--inject, crash@2]}, {name: hangy, batches: [8], args: [--inject, hang@warmup]}]
pairs: [[ok, ok]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 10, min_seconds: 10, floor_steps: 5, max_seconds: 10}
timeouts: {ready: 2s, stall: 2s, grace: 3s}
telemetry: none
container: {image: "sharebench-test:ci", command: [/fake]}
`)
	b := NewContainerBackend(c.Container)
	b.Binary = bin
	b.Environ = func() []string {
		return append(os.Environ(), "FAKE_DOCKER_LOG="+logPath, "FAKE_DOCKER_IMAGE=sharebench-test:ci",
			"FAKE_DOCKER_WORKLOAD="+os.Args[0], envTestMode+"=fake-workload", EnvFakeConfig+`={"default_step_ms":3}`)
	}
	out := t.TempDir()
	if _, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: b}); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	latest := Latest(recs)
	cells := c.Cells() // ok, crashy, hangy, ok+ok
	for i, want := range []Status{StatusOK, StatusFailed, StatusFailed, StatusOK} {
		if r := latest[cells[i].ID]; r.Status != want {
			t.Errorf("%s: %s (%s), want %s", cells[i].Label, r.Status, r.Reason, want)
		}
	}
	if r := latest[cells[1].ID]; !strings.Contains(r.StderrTail, "InjectedCrash") {
		t.Errorf("crashy: stderr tail %q", r.StderrTail)
	}
	logb, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(logb)), "\n")
	var runs, removed, killed []string
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case f[0] == "run":
			if !strings.HasPrefix(l, "run --rm --init -i --name sb-") || !strings.Contains(l, `--gpus "device=0"`) ||
				!strings.Contains(l, "--ipc=host --network=none") || !strings.Contains(l, " sharebench-test:ci /fake --model ") {
				t.Errorf("run line: %s", l)
			}
			runs = append(runs, f[5])
		case f[0] == "rm" && f[1] == "-f":
			removed = append(removed, f[2])
		case f[0] == "kill":
			killed = append(killed, f[len(f)-1])
		}
	}
	// ok, crashy, hangy, and ok+ok (solo A then the pair's two members).
	if len(runs) != 6 {
		t.Errorf("%d containers started, want 6:\n%s", len(runs), logb)
	}
	for _, name := range runs {
		if !containsStr(removed, name) {
			t.Errorf("container %s not removed with rm -f", name)
		}
	}
	if len(killed) != 1 || !strings.Contains(killed[0], "-r0-solo-A-") {
		t.Errorf("kill --signal TERM sent to %v, want the hung container only", killed)
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// fakePodmanWithoutInit writes a fake podman CLI that fails every container with --init as
// podman does when its init binary (catatonit) is not installed, and logs its argv.
func fakePodmanWithoutInit(t *testing.T, dir string) (bin, logPath string) {
	t.Helper()
	bin, logPath = filepath.Join(dir, "podman"), filepath.Join(dir, "podman.log")
	script := `#!/bin/sh
printf '%s\n' "$*" >> "` + logPath + `"
case "$1" in
run|create)
	for a in "$@"; do
		if [ "$a" = "--init" ]; then
			echo "Error: container-init binary not found on the host: stat /usr/libexec/podman/catatonit: no such file or directory" >&2
			exit 125
		fi
	done
	;;
esac
exit 0
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, logPath
}

// TestContainerPreflightWithoutInit: with podman missing its init binary, the campaign stops
// before its first cell with one line that says so, instead of failing every cell with exit
// code 125.
func TestContainerPreflightWithoutInit(t *testing.T) {
	t.Parallel()
	bin, logPath := fakePodmanWithoutInit(t, t.TempDir())
	c := mustParse(t, `
name: no-init
backend: container
solo_only: true
repeats: 1
max_repeats: 1
models: [{name: a, batches: [8]}, {name: b, batches: [8]}]
telemetry: none
workload: {device: cpu}
container: {engine: podman, image: "localhost/sharebench:test", command: [/fake]}
`)
	b := NewContainerBackend(c.Container)
	b.Binary = bin
	out := t.TempDir()
	sum, err := Run(context.Background(), c, RunOptions{OutDir: out, Backend: b})
	if !errors.Is(err, ErrNoInit) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "catatonit") {
		t.Errorf("err = %v; want ErrNoInit in one line that names catatonit", err)
	}
	if recs, _, _ := ReadJournal(filepath.Join(out, JournalFile)); len(recs) != 0 || sum.Ran != 0 {
		t.Errorf("%d cells ran, %d records", sum.Ran, len(recs))
	}
	logb, _ := os.ReadFile(logPath)
	if strings.Contains(string(logb), "\nrun ") || strings.HasPrefix(string(logb), "run ") {
		t.Errorf("a workload container was started:\n%s", logb)
	}
}

// TestPodman runs the container backend against the real podman engine with an image holding
// only a static fake-workload binary. It skips where podman cannot run
// containers.
func TestPodman(t *testing.T) {
	if testing.Short() {
		t.Skip("podman test skipped in -short mode")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Skip("podman not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "podman", "info").CombinedOutput(); err != nil {
		t.Skipf("podman info failed: %v: %s", err, tailString(string(out), 300))
	}
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	os.MkdirAll(filepath.Join(rootfs, "tmp"), 0o1777)
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(rootfs, "fake"), "./internal/fakeworkload")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the static fake workload: %v\n%s", err, out)
	}
	tar := filepath.Join(dir, "rootfs.tar")
	if out, err := exec.CommandContext(ctx, "tar", "-C", rootfs, "-cf", tar, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	image := "localhost/sharebench-fake:test"
	if out, err := exec.CommandContext(ctx, "podman", "import", tar, image).CombinedOutput(); err != nil {
		t.Skipf("podman import failed (no usable storage here?): %v: %s", err, tailString(string(out), 300))
	}
	c := mustParse(t, `
name: podman
backend: container
repeats: 1
max_repeats: 1
models: [{name: ok, batches: [8]}, {name: oomy, batches: [8], args: [--inject, oom@warmup]}]
pairs: [[ok, ok]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 10, min_seconds: 10, floor_steps: 5, max_seconds: 20}
timeouts: {ready: 60s, stall: 20s, grace: 5s}
telemetry: none
workload: {device: cpu, env: {SHAREBENCH_FAKE_CONFIG: '{"default_step_ms":5}'}}
container: {engine: podman, image: "localhost/sharebench-fake:test", command: [/fake]}
`)
	b := NewContainerBackend(c.Container)
	if _, err := exec.LookPath("runc"); err == nil {
		// Restricted sandboxes: crun fails on hybrid cgroups, default ulimits fail setrlimit.
		b.Runtime, b.Ulimits = "runc", []string{"nofile=1024:1024", "nproc=1024:1024"}
	}
	if err := b.Probe(ctx); errors.Is(err, ErrNoInit) {
		t.Skip(err.Error())
	}
	probe := exec.CommandContext(ctx, "podman", append(append([]string{"run", "--rm"}, runtimeFlags(b)...), image, "/fake", "--help")...)
	if out, err := probe.CombinedOutput(); err != nil && !strings.Contains(string(out), "Usage") && !strings.Contains(string(out), "-model") {
		t.Skipf("podman cannot run containers here: %v: %s", err, tailString(string(out), 300))
	}
	out := t.TempDir()
	if _, err := Run(ctx, c, RunOptions{OutDir: out, Backend: b}); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	latest := Latest(recs)
	cells := c.Cells() // ok, oomy, ok+ok, ok+oomy, oomy+oomy
	for _, cell := range cells {
		r := latest[cell.ID]
		t.Logf("%s: %s %s (%d runs)", cell.Label, r.Status, r.Reason, len(r.Runs))
	}
	want := []Status{StatusOK, StatusInfeasible, StatusOK}
	for i, w := range want {
		if r := latest[cells[i].ID]; r.Status != w {
			t.Errorf("%s: %s (%s; %s), want %s", cells[i].Label, r.Status, r.Reason, r.StderrTail, w)
		}
	}
	if r := latest[cells[2].ID]; r.Status == StatusOK && r.Runs[len(r.Runs)-1].StartSkewMs > 200 {
		t.Errorf("pair in containers released %.1f ms apart", r.Runs[len(r.Runs)-1].StartSkewMs)
	}
	if out, _ := exec.Command("podman", "ps", "-a", "--format", "{{.Names}}").Output(); strings.Contains(string(out), "sb-") {
		t.Errorf("containers left behind:\n%s", out)
	}
}

func runtimeFlags(b *ContainerBackend) []string {
	var f []string
	if b.Runtime != "" {
		f = append(f, "--runtime", b.Runtime)
	}
	for _, u := range b.Ulimits {
		f = append(f, "--ulimit", u)
	}
	return f
}
