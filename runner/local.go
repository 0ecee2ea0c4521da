package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Local starts workloads as child processes of the runner. Each child gets
// its own process group, so terminating it also ends anything it spawned.
type Local struct {
	// Environ returns the base environment (default os.Environ). Spec.Env is applied on top.
	Environ func() []string
}

// Name returns "local".
func (l *Local) Name() string { return BackendLocal }

// Probe succeeds: os/exec needs nothing. Whether the workload itself runs is what
// "sharebench profile selftest" checks.
func (l *Local) Probe(context.Context) error { return nil }

// Start starts s.Program followed by s.Args with pipes for stdin, stdout and stderr.
// CUDA_VISIBLE_DEVICES is set from s.GPUs, and with s.Isolate a fresh empty directory
// becomes CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY, so no MPS daemon is reachable.
func (l *Local) Start(_ context.Context, s Spec) (Process, error) {
	if err := checkSpec(s); err != nil {
		return nil, err
	}
	env := maps.Clone(s.Env)
	if env == nil {
		env = map[string]string{}
	}
	var cleanup []func()
	if len(s.GPUs) > 0 {
		env["CUDA_VISIBLE_DEVICES"] = strings.Join(s.GPUs, ",")
	}
	if s.Isolate {
		dir, err := os.MkdirTemp(s.RunDir, "mps-"+s.Name+"-")
		if err != nil {
			return nil, fmt.Errorf("runner: %s: MPS isolation directory: %w", s.Name, err)
		}
		cleanup = append(cleanup, func() { os.RemoveAll(dir) })
		env["CUDA_MPS_PIPE_DIRECTORY"] = dir
		env["CUDA_MPS_LOG_DIRECTORY"] = dir
	}
	base := os.Environ
	if l.Environ != nil {
		base = l.Environ
	}
	p, err := startProcess(s.Name, append(slices.Clone(s.Program), s.Args...), s.Workdir, mergeEnv(base(), env))
	if err != nil {
		for _, f := range cleanup {
			f()
		}
		return nil, err
	}
	p.cleanup = cleanup
	return p, nil
}

// mergeEnv returns base with the variables of over replaced or added, sorted by name for
// reproducible command lines.
func mergeEnv(base []string, over map[string]string) []string {
	m := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			m[k] = v
		}
	}
	maps.Copy(m, over)
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// localProcess is a child in its own process group, with os.Pipe pipes (no copying
// goroutines, so Wait does not depend on the pipes being drained).
type localProcess struct {
	name   string
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File

	mu     sync.Mutex
	reaped bool // the leader has been reaped: its pid (= pgid) may be reused, never signal it

	cleanup   []func()
	onWait    func() // extra cleanup after exit (containers: rm -f)
	terminate func(grace time.Duration)
	done      chan struct{}
}

func startProcess(name string, argv []string, dir string, env []string) (*localProcess, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("runner: %s: %w", name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("runner: %s: %w", name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, fmt.Errorf("runner: %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = newProcessGroupAttr()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("runner: %s: start %s: %w", name, argv[0], err)
	}
	p := &localProcess{name: name, cmd: cmd, stdin: inW, stdout: outR, stderr: errR, done: make(chan struct{})}
	p.terminate = p.terminateGroup
	return p, nil
}

func (p *localProcess) Stdin() io.WriteCloser { return p.stdin }
func (p *localProcess) Stdout() io.Reader     { return p.stdout }
func (p *localProcess) Stderr() io.Reader     { return p.stderr }

// Wait waits for the group leader to exit without reaping it, kills what is left of its
// process group (helpers it spawned would otherwise hold the pipes open), then reaps it.
func (p *localProcess) Wait() (Exit, error) {
	waitExited(p.cmd.Process.Pid)
	p.mu.Lock()
	signalGroup(p.cmd.Process.Pid, sigKill)
	p.reaped = true
	p.mu.Unlock()
	err := p.cmd.Wait()
	close(p.done)
	for _, f := range p.cleanup {
		f()
	}
	if p.onWait != nil {
		p.onWait()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return Exit{Code: -1}, fmt.Errorf("runner: %s: wait: %w", p.name, err)
	}
	return exitOf(p.cmd.ProcessState), nil
}

// signal sends sig to the process group unless the leader has been reaped.
func (p *localProcess) signal(sig processSignal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		signalGroup(p.cmd.Process.Pid, sig)
	}
}

// Terminate sends SIGTERM to the process group now and SIGKILL after grace.
func (p *localProcess) Terminate(grace time.Duration) { p.terminate(grace) }

func (p *localProcess) terminateGroup(grace time.Duration) {
	p.signal(sigTerm)
	go func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			p.signal(sigKill)
		}
	}()
}

// Close closes the parent's pipe ends.
func (p *localProcess) Close() error {
	return errors.Join(closeQuiet(p.stdin), closeQuiet(p.stdout), closeQuiet(p.stderr))
}

func closeQuiet(f *os.File) error {
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// EnvToken is the environment variable that marks every workload process with its campaign,
// cell and run ("CAMPAIGN/CELL/RUN/ROLE"). Children inherit it, so processes that leave their
// process group (setsid) or outlive a killed runner are found by it: at the end of each run,
// and when a campaign resumes.
const EnvToken = "SHAREBENCH_RUN_TOKEN"

// CampaignToken derives a campaign's token from its output directory: a resumed campaign
// (same directory) recognises the processes of its earlier invocations.
func CampaignToken(outDir string) string {
	abs, err := filepath.Abs(outDir)
	if err != nil {
		abs = outDir
	}
	return fmt.Sprintf("c%016x", SeedFor("campaign", abs))
}

// cpuRanges formats ascending CPU numbers compactly: "0-3,8".
func cpuRanges(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
