package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/profile"
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
	t.Run("a plan over the budget stops before the preflight", func(t *testing.T) {
		// A stand-in binary whose projection does not fit: the script must stop with the
		// projection's verdict before it spends device time.
		bin := filepath.Join(t.TempDir(), "sharebench")
		stub := "#!/bin/sh\ncase \"$1 $2\" in\n'help '*) exit 0 ;;\n'profile plan') echo 'projected campaign: 900 s (windows 800 s, run overheads 50 s, warm workers 50 s); shot 990 s of a 400 s budget: does not fit'; echo 'Error: profile plan: too long' >&2; exit 1 ;;\nesac\nexit 3\n"
		if err := os.WriteFile(bin, []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
		out, code := deviceCheck(t, []string{"SHAREBENCH=" + bin, "OUT=" + t.TempDir()}, "--python", py)
		if code != 2 || !strings.Contains(out, "plan does not fit its 400s budget") || !strings.Contains(out, "shot 990 s") || strings.Contains(out, "preflight:") {
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
			Cells    int            `json:"cells"`
			Status   map[string]int `json:"status"`
			Rows     []map[string]any
			Measured map[string]float64 `json:"measured"`
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum); err != nil || sum.Cells != 3 || sum.Status["ok"] != 3 || len(sum.Rows) != 3 {
			t.Fatalf("summary.json: %v\n%s", err, b)
		}
		// Each cell's wall time splits into its runs' windows and the rest (setup), from the
		// journal.
		for _, r := range sum.Rows {
			w, ok1 := r["window_s"].(float64)
			run, ok2 := r["run_s"].(float64)
			setup, ok3 := r["setup_s"].(float64)
			wall, ok4 := r["wall_s"].(float64)
			if !ok1 || !ok2 || !ok3 || !ok4 || w <= 0 || run < w || setup < 0 || math.Abs(run+setup-wall) > 0.01 {
				t.Errorf("row %v: window, run, setup and wall times", r)
			}
		}
		if sum.Measured["window_s"] <= 0 || !strings.Contains(text, "| window s | run s | setup s |") {
			t.Errorf("measured %v; summary:\n%s", sum.Measured, text)
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
	// 8 solo cells and 36 pairs (28 of two models, 8 of a model with itself) at each of two
	// sub-batch levels.
	if g, d := plan(gpu), plan(dry); !slices.Equal(g, d) || len(g) != 88 {
		t.Errorf("the dry run's plan differs from the GPU's:\n%v\n%v", g, d)
	}
	count := map[string]int{}
	for _, cell := range gpu.Cells() {
		count[fmt.Sprintf("%s %d", cell.Kind, cell.Level)]++
		if cell.Kind == KindPair && cell.Mode != string(profile.Timeslice) {
			t.Errorf("%s: mode %s; the script adds MPS", cell.Label, cell.Mode)
		}
	}
	if want := map[string]int{"solo 0": 8, "pair 0": 36, "solo 1": 8, "pair 1": 36}; !maps.Equal(count, want) {
		t.Errorf("cells by kind and level %v, want %v", count, want)
	}
	for _, c := range []*Campaign{gpu, dry} {
		if c.Budget.D() <= 0 || c.Order != OrderLevels || c.Workers != WorkersWarm || c.Repeats != 1 || !c.ReuseSolo {
			t.Errorf("%s: budget %v, order %s, workers %s, repeats %d, reuse_solo %v", c.Name, c.Budget, c.Order, c.Workers, c.Repeats, c.ReuseSolo)
		}
	}
	// The dry run's windows hold fewer steps on a CPU, and no longer a cap.
	if dry.Window.FloorSteps > gpu.Window.FloorSteps || dry.Window.MaxSeconds > gpu.Window.MaxSeconds {
		t.Errorf("the dry run's windows are not a shorter version of the GPU's: %+v, %+v", dry.Window, gpu.Window)
	}
	if dry.Workload.Device != "cpu" || !dry.Workload.Tiny {
		t.Errorf("dry device %s tiny %v", dry.Workload.Device, dry.Workload.Tiny)
	}
}
