package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultMPSPipeDir is where an MPS control daemon listens when CUDA_MPS_PIPE_DIRECTORY is
// unset.
const DefaultMPSPipeDir = "/tmp/nvidia-mps"

// MPSStatus says whether an MPS daemon could serve CUDA processes on this host, and why.
type MPSStatus struct {
	Detected bool     `json:"detected"`
	Evidence []string `json:"evidence,omitempty"`
}

// DetectMPS looks for MPS without touching the GPU: an nvidia-cuda-mps-control or
// nvidia-cuda-mps-server process under procRoot (normally "/proc"), or a control pipe in
// pipeDir (normally DefaultMPSPipeDir, or $CUDA_MPS_PIPE_DIRECTORY). NVML's MPS process list
// is checked separately, per sample (Sample.MPSProcs).
func DetectMPS(procRoot, pipeDir string) MPSStatus {
	var st MPSStatus
	entries, err := os.ReadDir(procRoot)
	if err == nil {
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || !e.IsDir() {
				continue
			}
			if name := processName(filepath.Join(procRoot, e.Name())); strings.HasPrefix(name, "nvidia-cuda-mps") {
				st.Evidence = append(st.Evidence, fmt.Sprintf("process %s (pid %d)", name, pid))
			}
		}
	}
	if pipeDir != "" {
		p := filepath.Join(pipeDir, "control")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			st.Evidence = append(st.Evidence, "control pipe "+p)
		}
	}
	slices.Sort(st.Evidence)
	st.Detected = len(st.Evidence) > 0
	return st
}

// processName returns the executable name of a /proc/<pid> directory: the base name of
// argv[0] from cmdline, or comm (truncated to 15 bytes by the kernel) as a fallback.
func processName(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && len(b) > 0 {
		argv0, _, _ := strings.Cut(string(b), "\x00")
		if argv0 != "" {
			return filepath.Base(argv0)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
