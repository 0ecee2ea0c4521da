package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/dispatch"
)

// The Slurm sweep against a real cluster (byte-identical to a local sweep) is
// TestSlurmCluster/sweep in package runner; these tests need no Slurm.

func TestSlurmSweepScript(t *testing.T) {
	t.Parallel()
	script := string(slurmSweepScript([]string{"reproduce", "--label", "smoke"}, "/opt/sb/bin/sharebench", "/data/it's $(here)", "/data/w/runs.txt", 16))
	sweep := string(slurmSweepScript([]string{"sweep", "/my specs/e.yaml"}, "sb", "/o", "/l", 1))
	if want := `sb sweep '/my specs/e.yaml' --out /o --run "$run"`; !strings.Contains(sweep, want) {
		t.Errorf("sweep script lacks %q:\n%s", want, sweep)
	}
	for _, want := range []string{
		`task=$(( ${1:-0} + SLURM_ARRAY_TASK_ID ))`,
		`/opt/sb/bin/sharebench reproduce --label smoke --out '/data/it'\''s $(here)' --run "$run" </dev/null || rc=1`,
		`awk -v first=$(( task * 16 )) -v last=$(( (task + 1) * 16 )) 'NR > first && NR <= last' /data/w/runs.txt`,
		`exit "$rc"`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if _, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, out)
		}
	}
}

func TestSweepSlurmRejects(t *testing.T) {
	t.Parallel()
	runs := Plan(LabelSmoke)[:1]
	root := t.TempDir()
	s := &dispatch.Slurm{}
	for _, tc := range []struct {
		name string
		opt  SlurmSweepOptions
		want string
	}{
		{"no client", SlurmSweepOptions{Label: LabelSmoke, WorkDir: t.TempDir()}, "no Slurm client"},
		{"work dir inside the output", SlurmSweepOptions{Slurm: s, Label: LabelSmoke, WorkDir: filepath.Join(root, "work")}, "lies inside the output"},
		{"label with a newline", SlurmSweepOptions{Slurm: s, Label: "a\nb", WorkDir: t.TempDir()}, "label"},
	} {
		_, err := SweepSlurm(context.Background(), runs, root, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
