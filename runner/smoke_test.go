package runner

import (
	"context"
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
	for _, p := range tab.Pairs {
		if p.Xi < 0.5 || p.Xi > 5 {
			t.Errorf("pair %s+%s: ξ = %.3f is implausible", p.A, p.B, p.Xi)
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
