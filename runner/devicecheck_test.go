package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deviceCheck runs bench/device_check.sh with args and extra environment, returning its
// combined output and exit code.
func deviceCheck(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	cmd := exec.Command("bash", append([]string{filepath.Join("..", "bench", "device_check.sh")}, args...)...)
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

// TestDeviceCheckScript covers what the script decides before it measures anything; the
// whole path runs in "make device-check-dry" (CI).
func TestDeviceCheckScript(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range [][]string{{"--bogus"}, {"--budget", "ten"}, {"--budget", "60"}, {"--out"}} {
			if out, code := deviceCheck(t, []string{"OUT=" + t.TempDir()}, args...); code != 2 {
				t.Errorf("%v: exit %d, output:\n%s", args, code, out)
			}
		}
	})
	t.Run("no runnable binary", func(t *testing.T) {
		out, code := deviceCheck(t, []string{"SHAREBENCH=/bin/false", "OUT=" + t.TempDir()}, "--python", py)
		if code != 2 || !strings.Contains(out, "no runnable sharebench binary") || !strings.Contains(out, "make device-bin") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
	t.Run("no nvidia-smi fails fast", func(t *testing.T) {
		path := "/usr/bin:/bin"
		for _, d := range filepath.SplitList(path) {
			if _, err := os.Stat(filepath.Join(d, "nvidia-smi")); err == nil {
				t.Skip("nvidia-smi is installed")
			}
		}
		out, code := deviceCheck(t, []string{"PATH=" + path, "SHAREBENCH=/bin/true", "OUT=" + t.TempDir()}, "--python", py)
		if code != 2 || !strings.Contains(out, "nvidia-smi not found") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
	t.Run("preflight without CUDA fails clearly", func(t *testing.T) {
		bin := t.TempDir()
		smi := "#!/bin/sh\ncase \"$1\" in -L) echo 'GPU 0: NVIDIA H200 (UUID: GPU-0000)';; *) echo '0, NVIDIA H200';; esac\n"
		if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755); err != nil {
			t.Fatal(err)
		}
		out, code := deviceCheck(t, []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "SHAREBENCH=/bin/true", "OUT=" + t.TempDir()}, "--python", "/bin/false")
		if code != 2 || !strings.Contains(out, "preflight failed") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
	t.Run("summary of a campaign directory", func(t *testing.T) {
		run, out := t.TempDir(), t.TempDir()
		c, _ := fakeCampaign(t, "name: device-check\nrepeats: 1\nmax_repeats: 1\nreuse_solo: true\nmodels: [{name: resnet18, batches: [64]}, {name: vgg16, batches: [16]}]\npairs: [[resnet18, vgg16]]\n"+quickFake)
		if _, err := runCampaign(t, context.Background(), c, run, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		text, code := deviceCheck(t, []string{"OUT=" + out}, "--summarize", run, "--python", py)
		if code != 0 || !strings.Contains(text, "| resnet18/64/64+vgg16/16/16 | ok |") {
			t.Errorf("exit %d, output:\n%s", code, text)
		}
		var sum struct {
			Cells  int            `json:"cells"`
			Status map[string]int `json:"status"`
			Rows   []map[string]string
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum); err != nil || sum.Cells != 3 || sum.Status["ok"] != 3 || len(sum.Rows) != 3 {
			t.Errorf("summary.json: %v\n%s", err, b)
		}
	})
}

// TestDeviceCheckCampaigns pins the device check's plan: the authors' eight models at their
// batches (workloads/catalog.json), and a dry run on the CPU with the same models, pairs,
// levels and order, so that CI rehearses what the GPU host runs.
func TestDeviceCheckCampaigns(t *testing.T) {
	t.Parallel()
	load := func(name string) *Campaign {
		c, err := LoadCampaign(filepath.Join("..", "bench", "campaigns", name))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	gpu, dry := load("device-check.yaml"), load("device-check-dry.yaml")
	var cat struct {
		Models map[string]struct {
			Authors      bool `json:"authors"`
			DefaultBatch int  `json:"default_batch"`
		} `json:"models"`
	}
	b, err := os.ReadFile(filepath.Join("..", "workloads", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	var authors []string
	for name, m := range cat.Models {
		if m.Authors {
			authors = append(authors, name)
		}
	}
	var names []string
	for _, m := range gpu.Models {
		names = append(names, m.Name)
		if want := cat.Models[m.Name].DefaultBatch; len(m.Batches) != 1 || m.Batches[0] != want {
			t.Errorf("%s: batches %v, want the authors' %d", m.Name, m.Batches, want)
		}
	}
	slices.Sort(names)
	slices.Sort(authors)
	if !slices.Equal(names, authors) || len(names) != 8 {
		t.Errorf("device check models %v, want the authors' eight %v", names, authors)
	}
	plan := func(c *Campaign) []string {
		var out []string
		for _, cell := range c.Cells() {
			s := cell.Kind + " " + cell.A.Model
			if cell.B != nil {
				s += "+" + cell.B.Model
			}
			out = append(out, s+" level "+string(rune('0'+cell.Level)))
		}
		return out
	}
	if g, d := plan(gpu), plan(dry); !slices.Equal(g, d) || len(g) != 24 {
		t.Errorf("the dry run's plan differs from the GPU's:\n%v\n%v", g, d)
	}
	if gpu.Budget.D() <= 0 || gpu.Order != OrderLevels || dry.Workload.Device != "cpu" || !dry.Workload.Tiny {
		t.Errorf("budget %v, order %s, dry device %s tiny %v", gpu.Budget, gpu.Order, dry.Workload.Device, dry.Workload.Tiny)
	}
}
