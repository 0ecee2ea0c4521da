package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sharebench/sharebench/runner/gpu"
)

// MPSControl is the MPS control daemon's executable.
const MPSControl = "nvidia-cuda-mps-control"

// MPSDaemon is the MPS control daemon that mps cells run under: one that was running already
// (found through its control pipe), or one the runner started with private pipe and log
// directories, and stops at the end. It changes no GPU setting (compute mode stays as it is);
// processes outside the campaign that set the same pipe directory would share it.
type MPSDaemon struct {
	// PipeDir is the CUDA_MPS_PIPE_DIRECTORY (and log directory) of the workloads.
	PipeDir string
	// Started is true when the runner started the daemon.
	Started bool
	// Evidence says which daemon it is, for the manifest.
	Evidence string
	env      []string
	dir      string
}

// StartMPS returns the daemon mps cells use: an existing one when DetectMPS found its control
// pipe (in pipeDir, else the default directory), else a private one started with
// nvidia-cuda-mps-control -d. When neither is possible it returns nil and the reason, and the
// mps cells are recorded as unavailable.
func StartMPS(ctx context.Context, found gpu.MPSStatus, pipeDir, token string, log *slog.Logger) (*MPSDaemon, string) {
	if pipeDir == "" {
		pipeDir = gpu.DefaultMPSPipeDir
	}
	if isPipe(filepath.Join(pipeDir, "control")) {
		return &MPSDaemon{PipeDir: pipeDir, Evidence: "MPS: using the running daemon at " + pipeDir}, ""
	}
	if found.Detected {
		return nil, fmt.Sprintf("an MPS daemon runs (%s) but its control pipe is not in %s: set CUDA_MPS_PIPE_DIRECTORY to its directory", strings.Join(found.Evidence, "; "), pipeDir)
	}
	bin, err := exec.LookPath(MPSControl)
	if err != nil {
		return nil, MPSControl + " not found on PATH"
	}
	dir, err := os.MkdirTemp("", "sharebench-mps-")
	if err != nil {
		return nil, err.Error()
	}
	d := &MPSDaemon{PipeDir: filepath.Join(dir, "pipe"), Started: true, dir: dir}
	for _, sub := range []string{d.PipeDir, filepath.Join(dir, "log")} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err.Error()
		}
	}
	d.env = append(os.Environ(), "CUDA_MPS_PIPE_DIRECTORY="+d.PipeDir, "CUDA_MPS_LOG_DIRECTORY="+filepath.Join(dir, "log"),
		EnvToken+"="+token+"/mps/")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "-d")
	cmd.Env = d.env
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Sprintf("%s -d: %v: %s", MPSControl, err, tailString(strings.TrimSpace(string(out)), 300))
	}
	for deadline := time.Now().Add(10 * time.Second); !isPipe(filepath.Join(d.PipeDir, "control")); {
		if time.Now().After(deadline) {
			d.Stop(log)
			return nil, fmt.Sprintf("%s -d started but no control pipe appeared in %s", MPSControl, d.PipeDir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.Evidence = "MPS: a private daemon started by the runner at " + d.PipeDir
	log.Info("started an MPS control daemon for the mps cells", "pipe_dir", d.PipeDir)
	return d, ""
}

// Stop quits a daemon the runner started (echo quit | nvidia-cuda-mps-control) and removes
// its directories; a daemon that was running already is left alone.
func (d *MPSDaemon) Stop(log *slog.Logger) {
	if d == nil || !d.Started {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, MPSControl)
	cmd.Env, cmd.Stdin = d.env, strings.NewReader("quit\n")
	if out, err := cmd.CombinedOutput(); err != nil && log != nil {
		log.Warn("cannot stop the MPS control daemon", "err", err, "output", strings.TrimSpace(string(out)))
	}
	os.RemoveAll(d.dir)
}

func isPipe(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}
