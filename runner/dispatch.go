package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sharebench/sharebench/dispatch"
	"github.com/sharebench/sharebench/internal/fsutil"
	"github.com/sharebench/sharebench/runner/gpu"
)

// DispatchFile is the dispatcher's record in a campaign directory: which cells were handed to
// which cluster tasks, and their last known state. "sharebench profile status" reads it; a
// resumed dispatcher reads it to adopt tasks that are still queued.
const DispatchFile = "dispatch.json"

// A Dispatcher runs cells of a campaign somewhere else: one cluster task per cell, each
// running "sharebench profile cell" (RunCell) with the campaign's process backend. It hands
// every Result back through the sink as soon as it has one; Dispatch journals them. Cells
// whose task ended without a result become failed Results carrying the engine's reason.
type Dispatcher interface {
	// Name is the engine: "slurm" or "kubernetes".
	Name() string
	// Probe checks that the engine's commands work from here.
	Probe(ctx context.Context) error
	// Harvest returns results that earlier submissions left behind (task output files of
	// tasks that finished while no dispatcher was watching). It runs before anything is
	// submitted; results already in the journal are dropped by the caller.
	Harvest(ctx context.Context, w Work) ([]Result, error)
	// Dispatch runs w.Cells and calls sink once per cell that ended. It returns when every
	// cell has ended, or with ctx's error after cancelling its tasks.
	Dispatch(ctx context.Context, w Work, sink func(Result) error) error
}

// Work is what a Dispatcher is asked to run.
type Work struct {
	// Campaign is the resolved campaign.
	Campaign *Campaign
	// OutDir is the campaign directory (journal, raw cell files, engine files).
	OutDir string
	// Cells are the cells to run, in index order.
	Cells []Cell
	// Previous is the last dispatch record found in OutDir (nil if none): tasks that are
	// still queued may be adopted instead of submitted again.
	Previous *DispatchState
	// Logger receives progress and warnings (never nil).
	Logger *slog.Logger
	// Track records the engine's view of the cells (written to dispatch.json).
	Track func(jobs []string, tasks []TaskStatus)
}

// DispatchState is the content of dispatch.json.
type DispatchState struct {
	// Engine is "slurm" or "kubernetes".
	Engine string `json:"engine"`
	// Campaign is the campaign's name.
	Campaign string `json:"campaign"`
	// Active is true while a dispatcher follows the tasks; a dispatcher that was killed
	// leaves it true, so Updated tells how old the view is.
	Active bool `json:"active"`
	// Updated is when the record was written (metadata only).
	Updated time.Time `json:"updated"`
	// Jobs are the engine's job IDs (Slurm) or Job names (Kubernetes), in submission order.
	Jobs []string `json:"jobs"`
	// Tasks are the cells handed to the engine and their last known state, by cell index.
	Tasks []TaskStatus `json:"tasks"`
}

// TaskStatus is the engine's view of one cell's task.
type TaskStatus struct {
	// Index and CellID identify the cell.
	Index  int    `json:"index"`
	CellID string `json:"cell_id"`
	// Task names the task: "1234_5" (Slurm array job 1234, task 5) or "JOB/INDEX" and the
	// pod (Kubernetes).
	Task string `json:"task"`
	// State is the engine's state: Slurm job states (PENDING, RUNNING, COMPLETED, FAILED,
	// ...) or pod phases (Pending, Running, Succeeded, Failed).
	State string `json:"state"`
	// Reason is the engine's reason for a pending or failed state, when it gives one.
	Reason string `json:"reason,omitempty"`
}

// Active reports whether the task is queued or running (not ended).
func (t TaskStatus) Active() bool { return dispatch.ActiveState(t.State) }

// DispatchOptions configures Dispatch.
type DispatchOptions struct {
	// OutDir is the campaign directory; the same directory as a local run, so a campaign
	// moves between engines and the local host by changing one flag.
	OutDir string
	// Dispatcher is the engine.
	Dispatcher Dispatcher
	// RetryFailed resubmits cells whose latest record is failed.
	RetryFailed bool
	// Logger receives log lines (nil: discarded).
	Logger *slog.Logger
	// Command is the command line recorded in the manifest and in profile.json.
	Command string
}

// Dispatch runs a campaign on a cluster engine. It shares Run's journal and outputs: cells
// whose latest record is done (ok, infeasible, infeasible_predicted) are never submitted
// again, failed ones only with RetryFailed, and every Result is appended to the journal as it
// arrives. Results that tasks of an earlier, interrupted dispatch left behind are harvested
// first. With reuse_solo, pair cells are submitted after the solo cells have ended (they read
// the solo results from the journal). On cancellation the dispatcher cancels its tasks;
// Dispatch then writes cells.csv, profile.json and manifest.json from the journal and returns
// the context's error.
func Dispatch(ctx context.Context, c *Campaign, opt DispatchOptions) (Summary, error) {
	sum := Summary{OutDir: opt.OutDir}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := opt.Dispatcher
	if opt.OutDir == "" || d == nil {
		return sum, errors.New("runner: Dispatch needs an output directory and a dispatcher")
	}
	if err := os.MkdirAll(filepath.Join(opt.OutDir, "cells"), 0o755); err != nil {
		return sum, fmt.Errorf("runner: %s: campaign %s: %w", d.Name(), c.Name, err)
	}
	if err := d.Probe(ctx); err != nil {
		return sum, fmt.Errorf("runner: %s: campaign %s: %w", d.Name(), c.Name, err)
	}
	journal, err := OpenJournal(filepath.Join(opt.OutDir, JournalFile))
	if err != nil {
		return sum, err
	}
	defer journal.Close()
	if err := writePlan(opt.OutDir, c); err != nil {
		return sum, err
	}
	records, problems, err := ReadJournal(journal.Path())
	if err != nil {
		return sum, err
	}
	for _, p := range problems {
		log.Warn("journal record ignored; its cell runs again", "journal", journal.Path(), "problem", p)
	}
	started := time.Now().UTC()
	j := &dispatchJournal{j: journal, latest: Latest(records), attempts: map[string]int{}, seen: map[string]bool{}}
	for _, r := range records {
		j.attempts[r.Cell.ID]++
		j.seen[resultKey(r)] = true
	}
	cells := c.Cells()
	byID := make(map[string]Cell, len(cells))
	for _, cell := range cells {
		byID[cell.ID] = cell
	}
	prev, err := ReadDispatchState(opt.OutDir)
	if err != nil {
		log.Warn("ignoring an unreadable dispatch record", "err", err)
		prev = nil
	}
	tracker := &dispatchTracker{path: filepath.Join(opt.OutDir, DispatchFile), state: DispatchState{Engine: d.Name(), Campaign: c.Name, Active: true}, log: log}
	if prev != nil && prev.Engine == d.Name() {
		tracker.state.Jobs = slices.Clone(prev.Jobs)
		tracker.state.Tasks = slices.Clone(prev.Tasks)
	}
	sink := func(r Result) error {
		cell, ok := byID[r.Cell.ID]
		if !ok || r.Record != RecordCell {
			log.Warn("result of a cell that is not in this campaign dropped", "cell", r.Cell.Label, "id", r.Cell.ID)
			return nil
		}
		r.Cell = cell
		added, err := j.add(r)
		if err != nil {
			return err
		}
		if added {
			sum.Ran++
			log.Info("cell ended", "engine", d.Name(), "index", cell.Index, "cell", cell.Label, "status", r.Status, "reason", r.Reason)
		}
		return nil
	}

	var runErr error
	base := Work{Campaign: c, OutDir: opt.OutDir, Previous: prev, Logger: log, Track: tracker.track}
	harvested, err := d.Harvest(ctx, base)
	if err != nil {
		runErr = err
	}
	for _, r := range harvested {
		if err := sink(r); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if sum.Ran > 0 {
		log.Info("harvested results of earlier tasks", "engine", d.Name(), "cells", sum.Ran)
	}
	var phases [2][]Cell
	for _, cell := range cells {
		if r, ok := j.latest[cell.ID]; ok && (r.Status.Done() || !opt.RetryFailed) {
			sum.Skipped++
			continue
		}
		phase := 0
		if c.ReuseSolo && cell.Kind == KindPair {
			phase = 1
		}
		phases[phase] = append(phases[phase], cell)
	}
	if sum.Skipped > 0 {
		log.Info("resuming: cells already in the journal are not submitted", "skipped", sum.Skipped)
	}
	for _, phase := range phases {
		if runErr != nil || len(phase) == 0 {
			continue
		}
		w := base
		w.Cells = phase
		runErr = d.Dispatch(ctx, w, sink)
		if runErr == nil {
			runErr = ctx.Err()
		}
	}
	tracker.state.Active = false
	tracker.flush()

	rb := RunOptions{OutDir: opt.OutDir, Command: opt.Command, Backend: engineBackend{name: d.Name() + "/" + c.Backend}}
	if err := writeOutputs(c, j.snapshot(), rb, hostInfo(), nil, gpu.MPSStatus{}, "remote", started); err != nil {
		return sum, errors.Join(runErr, err)
	}
	sum.Cells = CountCells(cells, j.latest)
	if runErr != nil {
		return sum, runErr
	}
	log.Info("campaign done", "engine", d.Name(), "ok", sum.Cells.OK, "infeasible", sum.Cells.Infeasible+sum.Cells.InfeasiblePredicted,
		"failed", sum.Cells.Failed, "pending", sum.Cells.Pending, "profile", filepath.Join(opt.OutDir, ProfileFile))
	return sum, nil
}

// dispatchJournal appends results to the journal once each, numbering attempts.
type dispatchJournal struct {
	j        *Journal
	latest   map[string]Result
	attempts map[string]int
	seen     map[string]bool
}

// add appends r unless an identical record (same cell, start and end) is already there.
func (d *dispatchJournal) add(r Result) (bool, error) {
	k := resultKey(r)
	if d.seen[k] {
		return false, nil
	}
	d.attempts[r.Cell.ID]++
	r.Attempt = d.attempts[r.Cell.ID]
	if err := d.j.Append(r); err != nil {
		return false, err
	}
	d.seen[k] = true
	d.latest[r.Cell.ID] = r
	return true, nil
}

func (d *dispatchJournal) snapshot() map[string]Result {
	out := make(map[string]Result, len(d.latest))
	for k, v := range d.latest {
		out[k] = v
	}
	return out
}

// resultKey identifies one execution of a cell: a record harvested twice is the same record.
func resultKey(r Result) string {
	return r.Cell.ID + "|" + r.Started.UTC().Format(time.RFC3339Nano) + "|" + r.Finished.UTC().Format(time.RFC3339Nano)
}

// dispatchTracker keeps dispatch.json up to date.
type dispatchTracker struct {
	path  string
	state DispatchState
	log   *slog.Logger
}

// track merges the engine's view of some cells into the record and writes it.
func (t *dispatchTracker) track(jobs []string, tasks []TaskStatus) {
	for _, j := range jobs {
		if !slices.Contains(t.state.Jobs, j) {
			t.state.Jobs = append(t.state.Jobs, j)
		}
	}
	for _, nt := range tasks {
		i := slices.IndexFunc(t.state.Tasks, func(o TaskStatus) bool { return o.Index == nt.Index })
		if i >= 0 {
			t.state.Tasks[i] = nt
		} else {
			t.state.Tasks = append(t.state.Tasks, nt)
		}
	}
	slices.SortFunc(t.state.Tasks, func(a, b TaskStatus) int { return a.Index - b.Index })
	t.flush()
}

func (t *dispatchTracker) flush() {
	t.state.Updated = time.Now().UTC()
	b, err := marshalIndent(t.state)
	if err == nil {
		err = fsutil.WriteFileAtomic(t.path, b)
	}
	if err != nil {
		t.log.Warn("cannot write the dispatch record", "path", t.path, "err", err)
	}
}

// ReadDispatchState reads DIR/dispatch.json; nil without error when there is none.
func ReadDispatchState(dir string) (*DispatchState, error) {
	b, err := os.ReadFile(filepath.Join(dir, DispatchFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	var s DispatchState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("runner: %s: %w", filepath.Join(dir, DispatchFile), err)
	}
	return &s, nil
}

// engineBackend names the engine and process backend in the manifest ("slurm/local").
type engineBackend struct{ name string }

func (e engineBackend) Name() string                { return e.name }
func (e engineBackend) Probe(context.Context) error { return nil }
func (e engineBackend) Start(context.Context, Spec) (Process, error) {
	return nil, errors.ErrUnsupported
}

// failedResult is the record of a cell whose task ended without a result of its own.
func failedResult(c *Campaign, cell Cell, reason, tail string) Result {
	now := time.Now().UTC()
	return Result{
		Record: RecordCell, Version: ResultVersion, Campaign: c.Name, Cell: cell, Status: StatusFailed,
		Reason: reason, StderrTail: tail, Mode: cellMode(cell), Backend: c.Backend, Attempt: 1, Started: now, Finished: now,
	}
}

// lastResult returns the result record that ends a task's output, if the output ends with
// one: the rule that decides whether a Slurm task completed its cell. A record cut short, or
// followed by other output, does not count. cellID, when set, must match the record's cell.
func lastResult(data []byte, cellID string) (Result, bool) {
	data = bytes.TrimRight(data, " \t\r\n")
	if len(data) == 0 {
		return Result{}, false
	}
	line := data
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		line = data[i+1:]
	}
	recs, _, err := DecodeResults(bytes.NewReader(line))
	if err != nil || len(recs) != 1 || (cellID != "" && recs[0].Cell.ID != cellID) {
		return Result{}, false
	}
	return recs[0], true
}

// findResult returns the last result record of the cell anywhere in mixed output (a pod's
// log interleaves the record on stdout with log lines on stderr).
func findResult(data []byte, cellID string) (Result, bool) {
	recs, _, err := DecodeResults(bytes.NewReader(data))
	if err != nil {
		return Result{}, false
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Cell.ID == cellID {
			return recs[i], true
		}
	}
	return Result{}, false
}
