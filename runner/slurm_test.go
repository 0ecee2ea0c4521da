package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/dispatch"
	"github.com/sharebench/sharebench/internal/golden"
)

const slurmGoldenCampaign = `
name: h200-pairs
backend: local
repeats: 3
max_repeats: 3
models:
  - {name: resnet50, batches: [64]}
  - {name: vgg16, batches: [32]}
slurm:
  partition: gpu
  account: proj-42
  constraint: h200&nvlink
  time: "00:20:00"
  mem: 64G
  max_running: 8
  extra_args: [--qos=long, --mail-type=END]
`

func TestSlurmJobScriptGolden(t *testing.T) {
	t.Parallel()
	c := mustParse(t, slurmGoldenCampaign)
	// A directory with a space, a quote and a command substitution: nothing may reach the
	// shell unquoted.
	out := "/data/it's a $(dir)"
	script := slurmCellScript(c, "/opt/sharebench/bin/sharebench", out+"/slurm/campaign.json", out)
	golden.Check(t, filepath.Join("testdata", "slurm", "job.sh.golden"), script)
	if _, err := exec.LookPath("bash"); err == nil {
		if b, err := exec.Command("bash", "-n", "-c", string(script)).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, b)
		}
	}
}

func TestSlurmSbatchArgsGolden(t *testing.T) {
	t.Parallel()
	c := mustParse(t, slurmGoldenCampaign)
	s := &Slurm{Config: c.Slurm, Workdir: "/home/u/sharebench"}
	cells := c.Cells() // 2 solo + 3 pair cells
	// MaxArraySize 3: cells 0-2 in one array, 3-4 in another (offset 3); cell 1 is done.
	todo := []Cell{cells[0], cells[2], cells[3], cells[4]}
	base := dispatch.SlurmArray{Name: "sharebench-" + c.Name, Script: "/runs/p/slurm/job.sh", LogDir: "/runs/100%/slurm", Gres: s.gres(c), CPUsPerTask: 2 * c.Workload.Threads}
	var b bytes.Buffer
	for _, a := range cellArrays(todo, 3, base) {
		fmt.Fprintf(&b, "# sbatch, offset %s\n", a.Args[0])
		b.Write(goldenArgv(s.engine().SbatchArgs(a)))
	}
	golden.Check(t, filepath.Join("testdata", "slurm", "sbatch.argv.golden"), b.Bytes())
}

func TestSlurmReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		task dispatch.SlurmTask
		want string
	}{
		{dispatch.SlurmTask{JobID: "9", Index: 2, State: "TIMEOUT", ExitCode: "0:15"}, "slurm: task 9_2 TIMEOUT: the task reached its time limit (--time) (exit code 0:15)"},
		{dispatch.SlurmTask{JobID: "9", Index: 3, State: "OUT_OF_MEMORY", ExitCode: "0:125"}, "slurm: task 9_3 OUT_OF_MEMORY: the task exceeded its host memory limit (--mem) (exit code 0:125)"},
		{dispatch.SlurmTask{JobID: "9", Index: 4, State: "NODE_FAIL"}, "slurm: task 9_4 NODE_FAIL: its node failed"},
		{dispatch.SlurmTask{JobID: "9", Index: 5, State: "PREEMPTED"}, "slurm: task 9_5 PREEMPTED: the task was preempted"},
		{dispatch.SlurmTask{JobID: "9", Index: 6, State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "1:0"}, "slurm: task 9_6 FAILED: sharebench exited without a result (exit code 1:0, NonZeroExitCode)"},
		{dispatch.SlurmTask{JobID: "9", Index: 7, State: "COMPLETED", ExitCode: "0:0"}, "slurm: task 9_7 COMPLETED: the task ended but its output has no result record (9_7.out)"},
	} {
		if got := slurmReason(tc.task, "/x/9_"+fmt.Sprint(tc.task.Index)+".out"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// fakeSlurm puts scripted sbatch, squeue, scontrol, sacct and scancel commands first on PATH:
// each records its argv in DIR/calls and answers from DIR/<command>.out (sbatch: the next job
// ID). The test changes the answers to move tasks through their states.
func fakeSlurm(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/bash
d=` + dispatch.ShellQuote(dir) + `
name=$(basename "$0")
printf '%s' "$name" >>"$d/calls"; printf ' %q' "$@" >>"$d/calls"; echo >>"$d/calls"
case $name in
sbatch)
  n=$(( $(cat "$d/jobid" 2>/dev/null || echo 100) + 1 )); echo "$n" >"$d/jobid"; echo "$n" ;;
*) cat "$d/$name.out" 2>/dev/null || true ;;
esac
`
	for _, name := range []string{"sbatch", "squeue", "scontrol", "sacct", "scancel"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return dir
}

// TestSlurmDispatchStates runs the Slurm dispatcher against fake Slurm commands: the first
// task completes with a result, the others end in TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, or
// COMPLETED without a result (kept waiting for its output for CollectGrace), or are forgotten
// by Slurm. Each becomes a failed cell carrying the state.
func TestSlurmDispatchStates(t *testing.T) {
	dir := fakeSlurm(t)
	write := func(name, s string) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
			panic(err)
		}
	}
	write("scontrol.out", "MaxArraySize = 1001\nAccountingStorageType = accounting_storage/none\n")
	c := mustParse(t, `
name: states
backend: fake
repeats: 1
max_repeats: 1
solo_only: true
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}, {name: d, batches: [8]}, {name: e, batches: [8]}, {name: f, batches: [8]}]
slurm: {poll: 20ms, poll_max: 50ms, sharebench: /opt/sb}
`)
	cells := c.Cells()
	out := t.TempDir()
	s := &Slurm{Config: c.Slurm, CollectGrace: 300 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		// Once submitted (job 101), all tasks run, then end.
		for {
			if b, _ := os.ReadFile(filepath.Join(dir, "jobid")); strings.TrimSpace(string(b)) == "101" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		write("squeue.out", "101_0|RUNNING|None\n101_1|RUNNING|None\n101_2|RUNNING|None\n101_3|RUNNING|None\n101_4|RUNNING|None\n101_5|PENDING|Resources\n")
		time.Sleep(100 * time.Millisecond)
		res := scriptedResult(c, cells[0], StatusOK, 1)
		line, _ := MarshalResult(res)
		write(filepath.Join(out, SlurmDir, "101_0.out"), `{"record":"task","engine":"slurm"}`+"\n"+string(line))
		write(filepath.Join(out, SlurmDir, "101_2.err"), "slurmstepd: error: Detected 1 oom_kill event\n")
		write("scontrol.out", strings.Join([]string{
			"JobId=102 ArrayJobId=101 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0",
			"JobId=103 ArrayJobId=101 ArrayTaskId=1 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15",
			"JobId=104 ArrayJobId=101 ArrayTaskId=2 JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125",
			"JobId=105 ArrayJobId=101 ArrayTaskId=3 JobState=NODE_FAIL Reason=NodeDown ExitCode=0:0",
			"JobId=106 ArrayJobId=101 ArrayTaskId=4 JobState=COMPLETED Reason=None ExitCode=0:0",
			"MaxArraySize = 1001",
		}, "\n")+"\n")
		write("squeue.out", "")
	}()
	var got []Result
	w := Work{Campaign: c, OutDir: out, Cells: cells, Logger: discardLogger(), Track: func([]string, []TaskStatus) {}}
	if err := os.MkdirAll(filepath.Join(out, SlurmDir), 0o755); err != nil {
		t.Fatal(err)
	}
	err := s.Dispatch(ctx, w, func(r Result) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[int]string{}
	for _, r := range got {
		reasons[r.Cell.Index] = string(r.Status) + " " + r.Reason
	}
	want := map[int]string{
		0: "ok ",
		1: "failed slurm: task 101_1 TIMEOUT: the task reached its time limit (--time) (exit code 0:15, TimeLimit)",
		2: "failed slurm: task 101_2 OUT_OF_MEMORY: the task exceeded its host memory limit (--mem) (exit code 0:125, OutOfMemory)",
		3: "failed slurm: task 101_3 NODE_FAIL: its node failed (NodeDown)",
		4: "failed slurm: task 101_4 COMPLETED: the task ended but its output has no result record (101_4.out)",
		5: "failed slurm: task 101_5 UNKNOWN: Slurm no longer knows the task and its output has no result record",
	}
	if d := cmp.Diff(want, reasons); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	for _, r := range got {
		if r.Cell.Index == 2 && !strings.Contains(r.StderrTail, "oom_kill") {
			t.Errorf("OUT_OF_MEMORY cell: stderr tail %q", r.StderrTail)
		}
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if !strings.Contains(string(calls), "sbatch --parsable --job-name=sharebench-states --array=0-5 ") ||
		!strings.Contains(string(calls), "--gres=gpu:1 --cpus-per-task=4") {
		t.Errorf("sbatch call:\n%s", calls)
	}
	script, _ := os.ReadFile(filepath.Join(out, SlurmDir, "job.sh"))
	if !strings.Contains(string(script), "exec /opt/sb profile cell") {
		t.Errorf("job script:\n%s", script)
	}
}

// TestSlurmDispatchCancel checks that cancelling the context cancels the arrays (scancel)
// and records nothing for the cancelled tasks.
func TestSlurmDispatchCancel(t *testing.T) {
	dir := fakeSlurm(t)
	if err := os.WriteFile(filepath.Join(dir, "scontrol.out"), []byte("MaxArraySize = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "squeue.out"), []byte("101_0|RUNNING|None\n101_1|RUNNING|None\n102_0|PENDING|Resources\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, `
name: cancel
backend: fake
repeats: 1
max_repeats: 1
solo_only: true
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]
slurm: {poll: 20ms, poll_max: 50ms, sharebench: /opt/sb}
`)
	// Cancel once the engine reports running tasks: on state, not after a delay, so a slow
	// machine cannot cancel in the middle of the submission instead.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tracked []TaskStatus
	w := Work{Campaign: c, OutDir: t.TempDir(), Cells: c.Cells(), Logger: discardLogger(),
		Track: func(_ []string, ts []TaskStatus) {
			tracked = append(tracked, ts...)
			for _, x := range ts {
				if x.State == "RUNNING" {
					cancel()
				}
			}
		}}
	n := 0
	err := (&Slurm{Config: c.Slurm}).Dispatch(ctx, w, func(Result) error { n++; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n != 0 {
		t.Errorf("%d results recorded for cancelled tasks", n)
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if !strings.Contains(string(calls), "scancel 101 102\n") {
		t.Errorf("no scancel of both arrays (MaxArraySize 2 splits 3 cells):\n%s", calls)
	}
	if !strings.Contains(string(calls), "--array=0-1 ") || !strings.Contains(string(calls), "--array=0 ") {
		t.Errorf("arrays not split at MaxArraySize:\n%s", calls)
	}
	if len(tracked) == 0 || tracked[len(tracked)-1].Task == "" {
		t.Errorf("tasks not tracked: %+v", tracked)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestSlurmDispatchAdopts resumes after a dispatcher that was killed: the result that a task
// of the old dispatch left in its output is harvested, the task still queued is adopted (not
// submitted again), the task that vanished is submitted anew, and only that one.
func TestSlurmDispatchAdopts(t *testing.T) {
	dir := fakeSlurm(t)
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := mustParse(t, `
name: adopt
backend: fake
repeats: 1
max_repeats: 1
solo_only: true
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]
slurm: {poll: 20ms, poll_max: 50ms, sharebench: /opt/sb}
`)
	cells := c.Cells()
	out := t.TempDir()
	sdir := filepath.Join(out, SlurmDir)
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	result := func(i int) string {
		r := scriptedResult(c, cells[i], StatusOK, int64(i))
		line, _ := MarshalResult(r)
		return `{"record":"task","engine":"slurm"}` + "\n" + string(line)
	}
	// The old dispatch (job 90): task 0 finished unseen, task 1 still runs, task 2 vanished.
	write(filepath.Join(sdir, "90_0.out"), result(0))
	old := DispatchState{Engine: EngineSlurm, Campaign: c.Name, Active: true, Jobs: []string{"90"}, Tasks: []TaskStatus{
		{Index: 0, CellID: cells[0].ID, Task: "90_0", State: "RUNNING"},
		{Index: 1, CellID: cells[1].ID, Task: "90_1", State: "RUNNING"},
		{Index: 2, CellID: cells[2].ID, Task: "90_2", State: "PENDING"},
	}}
	b, _ := marshalIndent(old)
	write(filepath.Join(out, DispatchFile), string(b))
	write(filepath.Join(dir, "jobid"), "200\n")
	write(filepath.Join(dir, "scontrol.out"), "MaxArraySize = 1001\n")
	write(filepath.Join(dir, "squeue.out"), "90_1|RUNNING|None\n")
	go func() {
		for {
			if b, _ := os.ReadFile(filepath.Join(dir, "jobid")); strings.TrimSpace(string(b)) == "201" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		write(filepath.Join(sdir, "90_1.out"), result(1))
		write(filepath.Join(sdir, "201_2.out"), result(2))
		write(filepath.Join(dir, "squeue.out"), "")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sum, err := Dispatch(ctx, c, DispatchOptions{OutDir: out, Dispatcher: &Slurm{Config: c.Slurm}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cells.OK != 3 || sum.Ran != 3 {
		t.Errorf("summary %+v", sum)
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if n := strings.Count(string(calls), "sbatch "); n != 1 || !strings.Contains(string(calls), "--array=2 ") {
		t.Errorf("want one submission, of cell 2 only:\n%s", calls)
	}
	st, err := ReadDispatchState(out)
	if err != nil || st.Active {
		t.Fatalf("dispatch record %+v, %v", st, err)
	}
	var tasks []string
	for _, task := range st.Tasks {
		tasks = append(tasks, task.Task)
	}
	if d := cmp.Diff([]string{"90_0", "90_1", "201_2"}, tasks); d != "" {
		t.Errorf("tasks (-want +got):\n%s", d)
	}
}
