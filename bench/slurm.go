package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/dispatch"
	"github.com/sharebench/sharebench/internal/fsutil"
	"github.com/sharebench/sharebench/sim"
)

// SlurmSweepOptions configures SweepSlurm.
type SlurmSweepOptions struct {
	// Slurm submits and follows the job arrays (resources, limits, polling).
	Slurm *dispatch.Slurm
	// Label is the plan's label: every task runs "sharebench reproduce --label Label --run I".
	Label string
	// Command, when set, replaces "reproduce --label Label" as the sharebench arguments that
	// run one run of the plan (followed by --out and --run), e.g. "sweep SPEC".
	Command []string
	// WorkDir receives the job script, the run list (runs.txt) and each task's output and
	// error files. It must not lie inside the output root.
	WorkDir string
	// RunsPerTask is how many runs one array task executes, one after the other (default 1).
	RunsPerTask int
	// Sharebench is the sharebench executable as the compute nodes see it (default: this
	// executable, which must then be on a shared file system).
	Sharebench string
	// Progress receives one line per finished task (nil: silent); never part of the outputs.
	Progress io.Writer
}

// SweepSlurm executes runs as Slurm array tasks instead of local goroutines: each task runs
// RunsPerTask runs with "sharebench reproduce --run INDEX", which writes the run's directory
// below outRoot exactly as Sweep does (outRoot must be on a file system the nodes share), so
// Aggregate over the same directory gives the same bytes as a local sweep. The run
// directories of the given runs are removed first (a sweep recomputes them, as Sweep does),
// so a run whose task died is reported missing rather than stale. A run without output gets
// an Outcome with an error naming its task's Slurm state. The error is non-nil only for
// submission failures and cancellation (the arrays are then cancelled with scancel).
func SweepSlurm(ctx context.Context, runs []RunSpec, outRoot string, opt SlurmSweepOptions) ([]Outcome, error) {
	out := make([]Outcome, len(runs))
	for i := range runs {
		out[i].Run = &runs[i]
	}
	if len(runs) == 0 {
		return out, nil
	}
	s := opt.Slurm
	if s == nil {
		return out, errors.New("bench: slurm sweep: no Slurm client")
	}
	if !dispatch.SafeName(opt.Label) {
		return out, fmt.Errorf("bench: slurm sweep: label %q: use letters, digits, '.', '_' and '-'", opt.Label)
	}
	k := max(opt.RunsPerTask, 1)
	root, err := filepath.Abs(outRoot)
	if err != nil {
		return out, fmt.Errorf("bench: slurm sweep: %w", err)
	}
	work, err := filepath.Abs(opt.WorkDir)
	if err != nil {
		return out, fmt.Errorf("bench: slurm sweep: %w", err)
	}
	if rel, err := filepath.Rel(root, work); err == nil && filepath.IsLocal(rel) {
		return out, fmt.Errorf("bench: slurm sweep: the work directory %s lies inside the output %s", work, root)
	}
	bin := opt.Sharebench
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return out, fmt.Errorf("bench: slurm sweep: locating sharebench: %w", err)
		}
		if p, err := filepath.EvalSymlinks(bin); err == nil {
			bin = p
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return out, fmt.Errorf("bench: slurm sweep: %w", err)
	}
	var list bytes.Buffer
	for _, r := range runs {
		fmt.Fprintln(&list, r.Index)
		if err := os.RemoveAll(r.Dir(root)); err != nil {
			return out, fmt.Errorf("bench: slurm sweep: %w", err)
		}
	}
	listPath := filepath.Join(work, "runs.txt")
	if err := fsutil.WriteFileAtomic(listPath, list.Bytes()); err != nil {
		return out, err
	}
	script := filepath.Join(work, "job.sh")
	command := opt.Command
	if len(command) == 0 {
		command = []string{"reproduce", "--label", opt.Label}
	}
	if err := fsutil.WriteFileAtomic(script, slurmSweepScript(command, bin, root, listPath, k)); err != nil {
		return out, err
	}
	if err := os.Chmod(script, 0o755); err != nil {
		return out, fmt.Errorf("bench: slurm sweep: %w", err)
	}
	maxSize, err := s.MaxArraySize(ctx)
	if err != nil {
		return out, err
	}
	tasks := (len(runs) + k - 1) / k
	chunks := make([]int, tasks)
	for i := range chunks {
		chunks[i] = i
	}
	base := dispatch.SlurmArray{Name: "sharebench-reproduce-" + opt.Label, Script: script, LogDir: work, CPUsPerTask: s.Config.CPUsPerTask}
	var arrays []dispatch.SlurmArray
	offsetOf := map[string]int{}
	for _, a := range dispatch.SplitArrays(chunks, maxSize, base) {
		sub, err := s.Submit(ctx, a)
		if err != nil {
			var jobs []string
			for _, x := range arrays {
				jobs = append(jobs, x.JobID)
			}
			return out, s.CancelAll(jobs, err)
		}
		offsetOf[sub.JobID], _ = strconv.Atoi(a.Args[len(a.Args)-1])
		arrays = append(arrays, sub)
	}
	chunkRuns := func(t dispatch.SlurmTask) []int {
		first := (offsetOf[t.JobID] + t.Index) * k
		var idx []int
		for i := first; i < min(first+k, len(runs)); i++ {
			idx = append(idx, i)
		}
		return idx
	}
	finished := 0
	err = s.Watch(ctx, arrays, dispatch.SlurmHooks{
		Complete: func(t dispatch.SlurmTask) bool {
			for _, i := range chunkRuns(t) {
				if present, _ := runOutcome(&runs[i], root); !present {
					return false
				}
			}
			return true
		},
		Finished: func(t dispatch.SlurmTask, complete bool) error {
			for _, i := range chunkRuns(t) {
				present, err := runOutcome(&runs[i], root)
				if !present {
					err = fmt.Errorf("slurm task %s %s: the run wrote no output (%s)", t.Name(), t.State,
						filepath.Join(work, t.Name()+".err"))
				}
				out[i].Err = err
			}
			finished++
			if opt.Progress != nil {
				fmt.Fprintf(opt.Progress, "[%d/%d] slurm task %s %s (%d runs)\n", finished, tasks, t.Name(), t.State, len(chunkRuns(t)))
			}
			return nil
		},
	})
	if err != nil {
		return out, fmt.Errorf("bench: slurm sweep: %w", err)
	}
	return out, nil
}

// runOutcome reads a run directory written by a task: present is false when the run left no
// output; err is the recorded failure of a failed run.
func runOutcome(r *RunSpec, root string) (present bool, err error) {
	dir := r.Dir(root)
	if _, err := os.Stat(filepath.Join(dir, sim.SummaryFile)); err == nil {
		return true, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, FailureFile))
	if err != nil {
		return false, nil
	}
	var f Failure
	if err := json.Unmarshal(data, &f); err != nil {
		return true, fmt.Errorf("%s: %w", filepath.Join(dir, FailureFile), err)
	}
	return true, errors.New(f.Error)
}

// slurmSweepScript is the job script of a sweep's arrays: array task i (plus the offset, the
// first argument) runs lines (offset+i)·k+1 … (offset+i+1)·k of the run list, each with
// "sharebench COMMAND --out OUT --run INDEX". Every argument is shell-quoted.
func slurmSweepScript(command []string, bin, outRoot, list string, k int) []byte {
	q := dispatch.ShellQuote
	quoted := make([]string, len(command))
	for i, a := range command {
		quoted[i] = q(a)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `#!/bin/bash
# sharebench job script for "sharebench %s": array task i runs the plan
# indices on lines (OFFSET+i)*%d+1 ... (OFFSET+i+1)*%d of the run list, OFFSET being the first
# argument. Generated by sharebench on every submission; edits are overwritten.
set -u
task=$(( ${1:-0} + SLURM_ARRAY_TASK_ID ))
printf '{"record":"task","engine":"slurm","job_id":"%%s","array_job_id":"%%s","array_task_id":"%%s","hostname":"%%s"}\n' \
  "${SLURM_JOB_ID:-}" "${SLURM_ARRAY_JOB_ID:-}" "${SLURM_ARRAY_TASK_ID:-}" "$(hostname)"
rc=0
while read -r run; do
  %s %s --out %s --run "$run" </dev/null || rc=1
done < <(awk -v first=$(( task * %d )) -v last=$(( (task + 1) * %d )) 'NR > first && NR <= last' %s)
exit "$rc"
`, strings.Join(command, " "), k, k, q(bin), strings.Join(quoted, " "), q(outRoot), k, k, q(list))
	return b.Bytes()
}
