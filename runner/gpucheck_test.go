package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gpuCheck runs bench/gpu_check.sh with args and extra environment, returning its combined
// output and exit code.
func gpuCheck(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	cmd := exec.Command("bash", append([]string{filepath.Join("..", "bench", "gpu_check.sh")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestGPUCheckScript(t *testing.T) {
	t.Parallel()
	t.Run("no nvidia-smi fails fast", func(t *testing.T) {
		path := "/usr/bin:/bin"
		for _, d := range filepath.SplitList(path) {
			if _, err := os.Stat(filepath.Join(d, "nvidia-smi")); err == nil {
				t.Skip("nvidia-smi is installed")
			}
		}
		out, code := gpuCheck(t, []string{"PATH=" + path, "OUT=" + t.TempDir()})
		if code != 2 || !strings.Contains(out, "nvidia-smi not found") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
	t.Run("dry run", func(t *testing.T) {
		out, code := gpuCheck(t, []string{"SHAREBENCH=/bin/true"}, "--dry-run", "--out", "/x/y", "--python", "/opt/py", "--budget", "300")
		for _, s := range []string{"out=/x/y python=/opt/py budget=300s", "profile selftest --backend local --telemetry smi --python /opt/py",
			"--spec bench/campaigns/gpu-check.yaml --backend local --python /opt/py --out /x/y/campaign", "gpu-check-subbatch.yaml"} {
			if !strings.Contains(out, s) {
				t.Errorf("dry run output lacks %q:\n%s", s, out)
			}
		}
		if code != 0 {
			t.Errorf("exit %d", code)
		}
		out, _ = gpuCheck(t, []string{"SHAREBENCH=/bin/true"}, "--dry-run", "--no-subbatch")
		if strings.Contains(out, "subbatch.yaml") {
			t.Errorf("--no-subbatch still runs the sub-batch step:\n%s", out)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range [][]string{{"--bogus"}, {"--budget", "ten"}, {"--out"}} {
			if out, code := gpuCheck(t, nil, args...); code != 2 {
				t.Errorf("%v: exit %d, output:\n%s", args, code, out)
			}
		}
	})
	t.Run("probe without CUDA fails clearly", func(t *testing.T) {
		bin := t.TempDir()
		smi := "#!/bin/sh\ncase \"$1\" in -L) echo 'GPU 0: NVIDIA H200 (UUID: GPU-0000)';; *) echo '0, NVIDIA H200';; esac\n"
		if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755); err != nil {
			t.Fatal(err)
		}
		out, code := gpuCheck(t, []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "SHAREBENCH=/bin/true", "OUT=" + t.TempDir()}, "--python", "/bin/false")
		if code != 2 || !strings.Contains(out, "probe failed") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
	t.Run("summary of partial results", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 not installed")
		}
		out := t.TempDir()
		c, _ := fakeCampaign(t, `
name: gpu-check
repeats: 1
max_repeats: 1
reuse_solo: true
models: [{name: resnet50, batches: [64]}, {name: vgg16, batches: [32]}]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 8, min_seconds: 10, floor_steps: 5, max_seconds: 10}
telemetry: none
fake: {default_step_ms: 3}
`)
		if _, err := runCampaign(t, context.Background(), c, filepath.Join(out, "campaign"), RunOptions{}); err != nil {
			t.Fatal(err)
		}
		text, code := gpuCheck(t, []string{"OUT=" + out}, "--summary-only", "--python", "python3")
		if code != 0 || !strings.Contains(text, "resnet50/64/64+vgg16/32/32") {
			t.Errorf("exit %d, output:\n%s", code, text)
		}
		var sum struct {
			Steps map[string]struct {
				Rows []map[string]string `json:"rows"`
			} `json:"steps"`
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum); err != nil || len(sum.Steps["campaign"].Rows) != 5 {
			t.Errorf("summary.json: %v\n%s", err, b)
		}
	})
}
