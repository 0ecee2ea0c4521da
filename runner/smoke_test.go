package runner

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sharebench/sharebench/profile"
)

// EnvRequireTorch makes the torch-on-CPU tests fail instead of skip when torch cannot be
// imported (set by "make test-torch-cpu", the CI job dedicated to that tier).
const EnvRequireTorch = "SHAREBENCH_REQUIRE_TORCH"

// smokeCampaign loads bench/campaigns/profile-smoke.yaml with the interpreter from
// $SHAREBENCH_PYTHON (if set) and the workload script of this checkout; it skips the test
// when that interpreter cannot import torch.
func smokeCampaign(t *testing.T) *Campaign {
	t.Helper()
	c, err := LoadCampaign(filepath.Join("..", "bench", "campaigns", "profile-smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyEnv(os.Getenv)
	script, err := filepath.Abs(filepath.Join("..", "workloads", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	c.Workload.Script = script
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	requireTorch(t, c.Workload.Python, script)
	return c
}

func requireTorch(t *testing.T, python, script string) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv(EnvRequireTorch) != "" {
		skip = t.Fatalf
	}
	if _, err := os.Stat(script); err != nil {
		skip("workload script missing: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, python, "-c", "import torch, torchvision").CombinedOutput(); err != nil {
		skip("%s cannot import torch and torchvision (install python3-torch python3-torchvision, or set %s): %v: %s",
			python, EnvPython, err, tailString(string(out), 200))
	}
}

// TestProfileSmoke runs bench/campaigns/profile-smoke.yaml end to end with the real
// workload on CPU, as "make profile-smoke" does.
func TestProfileSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("real-workload smoke campaign skipped in -short mode")
	}
	c := smokeCampaign(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	sum, err := Run(ctx, c, RunOptions{OutDir: out, Backend: &Local{}, Command: "sharebench profile run --spec bench/campaigns/profile-smoke.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("profile-smoke: %d cells in %s", sum.Cells.Total, time.Since(start).Round(time.Second))
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	for _, r := range recs {
		if r.Status != StatusOK {
			t.Errorf("%s: %s: %s\n%s", r.Cell.Label, r.Status, r.Reason, r.StderrTail)
		}
		for _, s := range []*Side{r.A, r.B} {
			if s != nil && s.LoggedStepMs > 0 {
				t.Logf("%s %s: harness %.3f ms vs logged %.3f ms per step", r.Cell.Label, s.Member, s.HarnessStepMs, s.LoggedStepMs)
			}
		}
	}
	tab, err := profile.LoadFile(filepath.Join(out, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	if tab.GPU != "cpu" || tab.Provenance.Host["torch"] == "" || len(tab.Models) != 2 || len(tab.Pairs) != 4 {
		t.Errorf("profile: gpu %q, host %v, %d models, %d pairs", tab.GPU, tab.Provenance.Host, len(tab.Models), len(tab.Pairs))
	}
	for _, m := range tab.Models {
		if len(m.Configs) != 2 {
			t.Errorf("model %s: %d configs, want 2", m.Name, len(m.Configs))
		}
		for _, s := range m.Configs {
			if s.MemBytes <= 0 || s.IterS[1] <= 0 {
				t.Errorf("model %s config %d/%d: mem %d, iter %v", m.Name, s.Batch, s.SubBatch, s.MemBytes, s.IterS)
			}
		}
	}
	// No bound on ξ itself: on a shared CPU it measures the machine's load, not the workloads.
	for _, p := range tab.Pairs {
		if !(p.Xi > 0) || math.IsInf(p.Xi, 0) {
			t.Errorf("pair %s+%s: ξ = %v is not a ratio of step times", p.A, p.B, p.Xi)
		}
	}
}

func TestSelftestLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("real-workload selftest skipped in -short mode")
	}
	c := smokeCampaign(t)
	c.Models = c.Models[:1]
	steps, err := Selftest(context.Background(), SelftestOptions{Campaign: c, Backend: &Local{}, OutDir: t.TempDir()})
	for _, s := range steps {
		t.Logf("%v %s: %s", s.OK, s.Name, s.Detail)
	}
	if err != nil || len(steps) != 2 {
		t.Fatalf("selftest: %v", err)
	}
}

func TestSelftestFake(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "name: st\nbackend: fake\nmodels: [{name: resnet50, batches: [32]}]\nfake: {default_step_ms: 2}\n")
	steps, err := Selftest(context.Background(), SelftestOptions{Campaign: c, Backend: fakeBackend(c.Fake), OutDir: t.TempDir()})
	if err != nil || len(steps) != 2 || !steps[0].OK || !steps[1].OK {
		t.Fatalf("selftest: %v %+v", err, steps)
	}
}

// TestHarnessOverhead measures the harness overhead with the real workload (set
// SHAREBENCH_OVERHEAD=1; it takes about a minute). "sharebench profile selftest --overhead"
// reports the same numbers.
func TestHarnessOverhead(t *testing.T) {
	if os.Getenv("SHAREBENCH_OVERHEAD") == "" {
		t.Skip("set SHAREBENCH_OVERHEAD=1 to measure the harness overhead")
	}
	c := smokeCampaign(t)
	c.Models = c.Models[:1]
	for _, dry := range []bool{false, true} {
		steps := 60
		if dry {
			// --dry-run steps are ~2 ms of sleep: the harness's share is most visible there.
			c.Workload.Args, steps = []string{"--dry-run"}, 2000
		}
		rep, err := MeasureOverhead(context.Background(), c, t.TempDir(), steps, 3)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("dry-run=%v: %+v", dry, rep)
	}
}

// TestGlooPair runs a pair of two-process jobs (torch.distributed with gloo on CPU, tiny
// ResNet-18): each job's rank 0 speaks the protocol and its rank 1 follows; the profile gets
// the 2-GPU entries. It checks the path, not the numbers.
func TestGlooPair(t *testing.T) {
	if testing.Short() {
		t.Skip("real-workload gloo pair skipped in -short mode")
	}
	base := smokeCampaign(t)
	c := mustParse(t, `
name: gloo-pair
repeats: 1
max_repeats: 1
reuse_solo: true
models: [{name: resnet18, batches: [4], gpus: [2]}]
pairs: [[resnet18, resnet18]]
warmup: {steps: 1, seconds: 0}
window: {min_steps: 3, min_seconds: 1000, floor_steps: 3, trim: 0, max_seconds: 120}
workload: {device: cpu, tiny: true, threads: 1}
timeouts: {ready: 3m, stall: 2m, grace: 10s}
telemetry: none
`)
	c.Workload.Python, c.Workload.Script = base.Workload.Python, base.Workload.Script
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sum, err := Run(ctx, c, RunOptions{OutDir: out, Backend: &Local{}})
	if err != nil {
		t.Fatal(err)
	}
	recs, _, _ := ReadJournal(filepath.Join(out, JournalFile))
	for _, r := range recs {
		if r.Status != StatusOK {
			t.Errorf("%s: %s: %s\n%s", r.Cell.Label, r.Status, r.Reason, r.StderrTail)
		}
	}
	tab, err := profile.LoadFile(filepath.Join(out, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cells.OK != 2 || len(tab.Models) != 1 || tab.Models[0].Configs[0].IterS[2] <= 0 || len(tab.Pairs) != 1 || tab.Pairs[0].GPUs != 2 {
		t.Errorf("summary %+v, profile models %+v pairs %+v", sum.Cells, tab.Models, tab.Pairs)
	}
}
