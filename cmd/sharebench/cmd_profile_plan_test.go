package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/runner"
)

// deviceCheckConstants reads the device check script's budget and the times it assumes around
// the campaign, so that this test projects exactly what the script checks.
func deviceCheckConstants(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "bench", "device_check.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, name := range []string{"BUDGET", "PRE_S", "OVERRUN", "PACK"} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\d+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("bench/device_check.sh sets no %s", name)
		}
		out[name], _ = strconv.Atoi(string(m[1]))
	}
	return out
}

// TestProfilePlanDeviceCheck: the device check's GPU campaign, projected from the published
// step times as the script does, fits the script's budget; a smaller budget fails with one
// line that says by how much.
func TestProfilePlanDeviceCheck(t *testing.T) {
	k := deviceCheckConstants(t)
	spec := filepath.Join("..", "..", "bench", "campaigns", "device-check.yaml")
	trace := filepath.Join("..", "..", runner.MuriTestbedTrace)
	args := func(budget int, extra ...string) []string {
		return append([]string{"profile", "plan", "--spec", spec, "--muri-trace", trace, "--budget", strconv.Itoa(budget) + "s",
			"--fixed", strconv.Itoa(k["PRE_S"]) + "s", "--reserve", strconv.Itoa(k["OVERRUN"]+k["PACK"]) + "s"}, extra...)
	}
	code, out, errOut := execCLI(args(k["BUDGET"])...)
	if code != 0 || errOut != "" || !strings.Contains(out, "projection of campaign device-check (88 cells), not a measurement") ||
		!strings.Contains(out, "budget: fits") || !strings.Contains(out, "resource_time_1") {
		t.Fatalf("exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
	code, out, errOut = execCLI(args(k["BUDGET"], "--format", "json")...)
	var p runner.Projection
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Cells) != 88 || len(p.Groups) != 2 || !p.Fits || p.ShotS > float64(k["BUDGET"]) {
		t.Fatalf("json: exit %d, stderr %q, %+v", code, errOut, p.Groups)
	}
	code, out, errOut = execCLI(args(int(p.ShotS) - 1)...)
	if code != 1 || !strings.Contains(out, "does not fit") || strings.Count(errOut, "\n") != 1 ||
		!strings.HasPrefix(errOut, "Error: profile plan: campaign device-check: the projected shot takes ") {
		t.Errorf("over budget: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := execCLI(args(k["BUDGET"], "--step-times", "guessed")...); code != 1 || !strings.Contains(errOut, `--step-times "guessed"`) {
		t.Errorf("bad source: exit %d, stderr %q", code, errOut)
	}
}
