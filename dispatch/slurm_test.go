package dispatch

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitArrays(t *testing.T) {
	t.Parallel()
	got := SplitArrays([]int{0, 1, 2, 5, 1000, 1001, 2005}, 1001, SlurmArray{Args: []string{"x"}})
	type arr struct {
		Args    []string
		Indices []int
	}
	var have []arr
	for _, a := range got {
		have = append(have, arr{a.Args, a.Indices})
	}
	want := []arr{
		{[]string{"x", "0"}, []int{0, 1, 2, 5, 1000}},
		{[]string{"x", "1001"}, []int{0}},
		{[]string{"x", "2002"}, []int{3}},
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Error(d)
	}
	if got := indexList([]int{7, 0, 1, 2, 5, 8, 3}); got != "0-3,5,7-8" {
		t.Errorf("indexList = %q", got)
	}
}

func TestSlurmParsers(t *testing.T) {
	t.Parallel()
	squeue := "12_0|RUNNING|None\n12_1|PENDING|Resources\n12_2|PENDING|JobArrayTaskLimit\n13|RUNNING|None\n"
	wantQ := []SlurmTask{
		{JobID: "12", Index: 0, State: "RUNNING"},
		{JobID: "12", Index: 1, State: "PENDING", Reason: "Resources"},
		{JobID: "12", Index: 2, State: "PENDING", Reason: "JobArrayTaskLimit"},
	}
	if d := cmp.Diff(wantQ, ParseSqueue([]byte(squeue))); d != "" {
		t.Errorf("squeue: %s", d)
	}
	// Recorded from Slurm 22.05 (scontrol --oneliner show job ARRAY) with paths replaced;
	// the last line is a pending record with grouped task IDs.
	scontrol, err := os.ReadFile(filepath.Join("testdata", "slurm", "scontrol-show-job.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantS := []SlurmTask{
		{JobID: "1", Index: 4, State: "COMPLETED", ExitCode: "0:0"},
		{JobID: "1", Index: 3, State: "CANCELLED", ExitCode: "0:15"},
		{JobID: "1", Index: 2, State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0"},
		{JobID: "1", Index: 1, State: "COMPLETED", ExitCode: "0:0"},
		{JobID: "1", Index: 0, State: "COMPLETED", ExitCode: "0:0"},
		// The last line holds pending tasks grouped as "4,6-7": not a task yet, skipped.
	}
	if d := cmp.Diff(wantS, parseScontrolJobs(scontrol)); d != "" {
		t.Errorf("scontrol: %s", d)
	}
	sacct := "7_0|COMPLETED|0:0\n7_1|CANCELLED by 1000|0:15\n7_2|TIMEOUT|0:0\n7_[3-4]|PENDING|0:0\n"
	wantA := []SlurmTask{
		{JobID: "7", Index: 0, State: "COMPLETED", ExitCode: "0:0"},
		{JobID: "7", Index: 1, State: "CANCELLED", Reason: "by 1000", ExitCode: "0:15"},
		{JobID: "7", Index: 2, State: "TIMEOUT", ExitCode: "0:0"},
	}
	if d := cmp.Diff(wantA, parseSacct([]byte(sacct))); d != "" {
		t.Errorf("sacct: %s", d)
	}
	cfg := "Configuration data as of 2026-01-01T00:00:00\nAccountingStorageType   = accounting_storage/none\nMaxArraySize            = 4\n"
	if got := parseSlurmConfig([]byte(cfg)); got != (slurmSite{maxArraySize: 4}) {
		t.Errorf("config: %+v", got)
	}
	if got := parseSlurmConfig([]byte("AccountingStorageType = accounting_storage/slurmdbd\n")); got != (slurmSite{maxArraySize: 1001, accounting: true}) {
		t.Errorf("config with accounting: %+v", got)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	cases := []string{"plain", "", "with space", "it's", `"$(touch /tmp/x)"`, "a\nb", "`id`", "100%", "--flag=x"}
	for _, s := range cases {
		q := ShellQuote(s)
		if _, err := exec.LookPath("sh"); err != nil {
			continue
		}
		out, err := exec.Command("sh", "-c", "printf %s "+q).Output()
		if err != nil || string(out) != s {
			t.Errorf("ShellQuote(%q) = %s: the shell reads %q (%v)", s, q, out, err)
		}
	}
}
