package dispatch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SlurmConfig is what the tasks ask Slurm for (a campaign's or a sweep's slurm section).
// Every field is optional, and command-line flags override them. Values reach sbatch as
// separate arguments, never through a shell.
type SlurmConfig struct {
	// Partition, Account, QOS and Constraint are passed as --partition, --account, --qos and
	// --constraint.
	Partition  string `yaml:"partition,omitempty" json:"partition,omitempty"`
	Account    string `yaml:"account,omitempty" json:"account,omitempty"`
	QOS        string `yaml:"qos,omitempty" json:"qos,omitempty"`
	Constraint string `yaml:"constraint,omitempty" json:"constraint,omitempty"`
	// Time is the time limit of one task in a Slurm format ("20:00", "2:00:00", "1-00:00:00").
	Time string `yaml:"time,omitempty" json:"time,omitempty"`
	// GPUs is the number of whole GPUs per task (default 1): --gres=gpu:N, or gpu:TYPE:N with
	// GPUType. Campaigns with workload.device cpu ask for none.
	GPUs    int    `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	GPUType string `yaml:"gpu_type,omitempty" json:"gpu_type,omitempty"`
	// CPUsPerTask is --cpus-per-task (default: 2 × workload.threads, room for both processes
	// of a pair).
	CPUsPerTask int `yaml:"cpus_per_task,omitempty" json:"cpus_per_task,omitempty"`
	// Mem is --mem (e.g. "32G"); empty keeps the site's default.
	Mem string `yaml:"mem,omitempty" json:"mem,omitempty"`
	// MaxRunning throttles each job array to this many running tasks (--array=…%K); 0: no
	// throttle beyond what the resources allow.
	MaxRunning int `yaml:"max_running,omitempty" json:"max_running,omitempty"`
	// MaxArraySize is the site's limit on array indices (0: read MaxArraySize from
	// "scontrol show config"). Larger campaigns are split into several arrays.
	MaxArraySize int `yaml:"max_array_size,omitempty" json:"max_array_size,omitempty"`
	// ExtraArgs are passed to sbatch as they are, after the options above (e.g.
	// ["--mail-type=END", "--nice=10"]).
	ExtraArgs []string `yaml:"extra_args,omitempty" json:"extra_args,omitempty"`
	// Sharebench is the sharebench executable as the compute nodes see it (default: the
	// running executable, which must then be on a shared file system).
	Sharebench string `yaml:"sharebench,omitempty" json:"sharebench,omitempty"`
	// Poll is the first interval between status queries (default 5s); it doubles while
	// nothing changes, up to PollMax (default 60s).
	Poll    Duration `yaml:"poll,omitempty" json:"poll,omitempty"`
	PollMax Duration `yaml:"poll_max,omitempty" json:"poll_max,omitempty"`
}

// Validate checks the values that reach sbatch.
func (s *SlurmConfig) Validate() error { return s.validate() }

func (s *SlurmConfig) validate() error {
	for _, f := range []struct{ name, v string }{
		{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QOS}, {"constraint", s.Constraint},
		{"time", s.Time}, {"gpu_type", s.GPUType}, {"mem", s.Mem},
	} {
		if f.v != "" && !ValueOK(f.v) {
			return fmt.Errorf("slurm.%s: %q: want printable characters without spaces, not starting with '-'", f.name, f.v)
		}
	}
	if s.GPUType != "" && !SafeName(s.GPUType) {
		return fmt.Errorf("slurm.gpu_type: %q: use letters, digits, '.', '_' and '-'", s.GPUType)
	}
	if s.GPUs < 0 || s.CPUsPerTask < 0 || s.MaxRunning < 0 || s.MaxArraySize < 0 || s.Poll < 0 || s.PollMax < 0 {
		return errors.New("slurm: gpus, cpus_per_task, max_running, max_array_size, poll and poll_max must not be negative")
	}
	for i, a := range s.ExtraArgs {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "\n\r\x00") {
			return fmt.Errorf("slurm.extra_args[%d]: %q: want an sbatch option (starting with '-') on one line", i, a)
		}
	}
	if s.Sharebench != "" && !filepath.IsAbs(s.Sharebench) {
		return fmt.Errorf("slurm.sharebench: %q: must be an absolute path", s.Sharebench)
	}
	return nil
}

// Slurm runs work on a Slurm cluster through its commands (sbatch, squeue, scontrol, sacct,
// scancel) and nothing else: no Go dependency, no REST API. It submits job arrays, follows
// them, and cancels them.
type Slurm struct {
	// Config holds the resources, limits and polling intervals.
	Config SlurmConfig
	// Workdir is the tasks' working directory (--chdir; default: this process's).
	Workdir string
	// CollectGrace is how long the output of a task that Slurm reports COMPLETED may take to
	// appear (shared file systems cache attributes); default 30s.
	CollectGrace time.Duration
	// Logger receives progress and warnings (nil: discarded).
	Logger *slog.Logger

	site *slurmSite
}

// slurmSite is what "scontrol show config" says about the cluster.
type slurmSite struct {
	maxArraySize int
	accounting   bool
}

// SlurmArray is one job array: a job script, its arguments and the array indices to run.
type SlurmArray struct {
	// Name is the job name (--job-name).
	Name string
	// Script is the job script's path; Args follow it on the sbatch command line.
	Script string
	Args   []string
	// Indices are the array task IDs, each below the site's MaxArraySize.
	Indices []int
	// LogDir receives each task's standard output (JOB_TASK.out) and error (JOB_TASK.err).
	LogDir string
	// Gres is the generic resource request ("gpu:1"; empty: none); CPUsPerTask is
	// --cpus-per-task (0: the site's default).
	Gres        string
	CPUsPerTask int
	// JobID is the array's job ID once submitted.
	JobID string
}

// SlurmTask is one array task as Slurm sees it.
type SlurmTask struct {
	// JobID is the array's job ID; Index the array task ID.
	JobID string
	Index int
	// State is the job state (PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, ...); "UNKNOWN"
	// when Slurm no longer knows the task.
	State string
	// Reason is Slurm's reason (why pending, or why it failed); ExitCode is "code:signal".
	Reason   string
	ExitCode string
}

// Name returns "1234_5".
func (t SlurmTask) Name() string { return t.JobID + "_" + strconv.Itoa(t.Index) }

// TaskKey identifies an array task: its array's job ID and its task ID.
type TaskKey struct {
	Job   string
	Index int
}

// Key returns the task's key.
func (t SlurmTask) Key() TaskKey { return TaskKey{t.JobID, t.Index} }

// OutputPath returns the file holding a task's standard output (its JSON lines).
func (a SlurmArray) OutputPath(index int) string {
	return filepath.Join(a.LogDir, fmt.Sprintf("%s_%d.out", a.JobID, index))
}

// ErrorPath returns the file holding a task's standard error.
func (a SlurmArray) ErrorPath(index int) string {
	return filepath.Join(a.LogDir, fmt.Sprintf("%s_%d.err", a.JobID, index))
}

func (s *Slurm) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Slurm) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return run(ctx, NameSlurm, name, args, nil)
}

// siteConfig reads MaxArraySize and the accounting setup once.
func (s *Slurm) siteConfig(ctx context.Context) (*slurmSite, error) {
	if s.site != nil {
		return s.site, nil
	}
	out, err := s.run(ctx, "scontrol", "show", "config")
	if err != nil {
		return nil, err
	}
	site := parseSlurmConfig(out)
	if s.Config.MaxArraySize > 0 {
		site.maxArraySize = s.Config.MaxArraySize
	}
	s.site = &site
	return s.site, nil
}

// parseSlurmConfig reads "Key = value" lines of "scontrol show config".
func parseSlurmConfig(out []byte) slurmSite {
	site := slurmSite{maxArraySize: 1001}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "MaxArraySize":
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				site.maxArraySize = n
			}
		case "AccountingStorageType":
			site.accounting = v != "" && v != "accounting_storage/none" && v != "(null)"
		}
	}
	return site
}

// Probe checks that sbatch exists and slurmctld answers.
func (s *Slurm) Probe(ctx context.Context) error {
	_, err := s.siteConfig(ctx)
	return err
}

// SbatchArgs returns the sbatch arguments that submit a (golden-tested; no shell involved).
func (s *Slurm) SbatchArgs(a SlurmArray) []string {
	c := s.Config
	spec := indexList(a.Indices)
	if c.MaxRunning > 0 {
		spec += "%" + strconv.Itoa(c.MaxRunning)
	}
	pattern := strings.ReplaceAll(a.LogDir, "%", "%%")
	args := []string{"--parsable", "--job-name=" + a.Name, "--array=" + spec,
		"--output=" + filepath.Join(pattern, "%A_%a.out"), "--error=" + filepath.Join(pattern, "%A_%a.err"),
		"--export=ALL"}
	if a.Gres != "" {
		args = append(args, "--gres="+a.Gres)
	}
	if a.CPUsPerTask > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(a.CPUsPerTask))
	}
	for _, o := range []struct{ flag, v string }{
		{"--partition", c.Partition}, {"--account", c.Account}, {"--qos", c.QOS}, {"--constraint", c.Constraint},
		{"--time", c.Time}, {"--mem", c.Mem},
	} {
		if o.v != "" {
			args = append(args, o.flag+"="+o.v)
		}
	}
	wd := s.Workdir
	if wd == "" {
		wd, _ = os.Getwd()
	}
	if wd != "" {
		args = append(args, "--chdir="+wd)
	}
	args = append(args, c.ExtraArgs...)
	args = append(args, a.Script)
	return append(args, a.Args...)
}

// SplitArrays spreads work items 0, 1, … (indices, ascending) over job arrays whose task IDs
// stay below maxSize, the site's MaxArraySize: array k covers items k·maxSize …
// (k+1)·maxSize−1 as tasks 0 … maxSize−1, and its job script gets the offset k·maxSize as its
// first argument (after base.Args), so task i runs item offset+i.
func SplitArrays(indices []int, maxSize int, base SlurmArray) []SlurmArray {
	maxSize = max(maxSize, 1)
	var out []SlurmArray
	off := -1
	for _, x := range indices {
		if o := x / maxSize * maxSize; len(out) == 0 || o != off {
			off = o
			a := base
			a.Args = append(slices.Clone(base.Args), strconv.Itoa(off))
			a.Indices = nil
			out = append(out, a)
		}
		last := &out[len(out)-1]
		last.Indices = append(last.Indices, x-off)
	}
	return out
}

// MaxArraySize returns the site's limit on array task IDs (Config.MaxArraySize when set).
func (s *Slurm) MaxArraySize(ctx context.Context) (int, error) {
	site, err := s.siteConfig(ctx)
	if err != nil {
		return 0, err
	}
	return site.maxArraySize, nil
}

// indexList formats array indices compactly: "0-3,5,7-8".
func indexList(xs []int) string {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Submit submits the array and returns it with its job ID.
func (s *Slurm) Submit(ctx context.Context, a SlurmArray) (SlurmArray, error) {
	if len(a.Indices) == 0 {
		return a, errNoIndices
	}
	if strings.Contains(a.LogDir, `\`) {
		return a, fmt.Errorf("slurm: sbatch: log directory %q: Slurm reads a backslash as 'no patterns'", a.LogDir)
	}
	if err := os.MkdirAll(a.LogDir, 0o755); err != nil {
		return a, fmt.Errorf("slurm: sbatch: %w", err)
	}
	out, err := s.run(ctx, "sbatch", s.SbatchArgs(a)...)
	if err != nil {
		return a, err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return a, fmt.Errorf("slurm: sbatch: unexpected answer %q", strings.TrimSpace(string(out)))
	}
	a.JobID = id
	s.log().Info("submitted job array", "engine", NameSlurm, "job", id, "name", a.Name, "tasks", len(a.Indices), "array", indexList(a.Indices))
	return a, nil
}

// Queue returns the tasks of the given jobs that squeue still lists (pending, running,
// completing, ...), one per array task.
func (s *Slurm) Queue(ctx context.Context, jobs []string) (map[TaskKey]SlurmTask, error) {
	out := map[TaskKey]SlurmTask{}
	if len(jobs) == 0 {
		return out, nil
	}
	b, err := s.run(ctx, "squeue", "--noheader", "--array", "--jobs="+strings.Join(jobs, ","), "--format=%i|%T|%r")
	if err != nil {
		// squeue refuses the whole list when one job is no longer known: ask one by one.
		if len(jobs) > 1 && strings.Contains(err.Error(), "Invalid job id") {
			for _, j := range jobs {
				m, err := s.Queue(ctx, []string{j})
				if err != nil {
					return nil, err
				}
				for k, v := range m {
					out[k] = v
				}
			}
			return out, nil
		}
		if strings.Contains(err.Error(), "Invalid job id") {
			return out, nil
		}
		return nil, err
	}
	for _, t := range ParseSqueue(b) {
		out[t.Key()] = t
	}
	return out, nil
}

// ParseSqueue reads "JOB_TASK|STATE|REASON" lines; lines of jobs that are not array tasks are
// skipped.
func ParseSqueue(b []byte) []SlurmTask {
	var out []SlurmTask
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), "|")
		if len(f) < 2 {
			continue
		}
		job, idx, ok := strings.Cut(f[0], "_")
		n, err := strconv.Atoi(idx)
		if !ok || err != nil {
			continue
		}
		t := SlurmTask{JobID: job, Index: n, State: f[1]}
		if len(f) > 2 && f[2] != "None" {
			t.Reason = f[2]
		}
		out = append(out, t)
	}
	return out
}

// Final returns the last state Slurm knows of the tasks of the given jobs: from sacct where
// accounting is configured, else from "scontrol show job" (which forgets jobs MinJobAge
// after they end). Tasks it no longer knows are missing from the map.
func (s *Slurm) Final(ctx context.Context, jobs []string) (map[TaskKey]SlurmTask, error) {
	out := map[TaskKey]SlurmTask{}
	site, err := s.siteConfig(ctx)
	if err != nil {
		return nil, err
	}
	if site.accounting {
		b, err := s.run(ctx, "sacct", "--noheader", "--parsable2", "--allocations", "--jobs="+strings.Join(jobs, ","),
			"--format=JobID,State,ExitCode")
		if err == nil {
			for _, t := range parseSacct(b) {
				out[t.Key()] = t
			}
			return out, nil
		}
		s.log().Warn("sacct failed; asking scontrol", "err", err)
	}
	for _, j := range jobs {
		b, err := s.run(ctx, "scontrol", "--oneliner", "show", "job", j)
		if err != nil {
			if strings.Contains(err.Error(), "Invalid job id") {
				continue
			}
			return nil, err
		}
		for _, t := range parseScontrolJobs(b) {
			out[t.Key()] = t
		}
	}
	return out, nil
}

// parseSacct reads "JobID|State|ExitCode" lines ("1234_5|CANCELLED by 0|0:15").
func parseSacct(b []byte) []SlurmTask {
	var out []SlurmTask
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), "|")
		if len(f) < 3 {
			continue
		}
		job, idx, ok := strings.Cut(f[0], "_")
		n, err := strconv.Atoi(idx)
		if !ok || err != nil {
			continue
		}
		state, reason, _ := strings.Cut(f[1], " ")
		out = append(out, SlurmTask{JobID: job, Index: n, State: state, Reason: strings.TrimSpace(reason), ExitCode: f[2]})
	}
	return out
}

// parseScontrolJobs reads "scontrol --oneliner show job" output: one "Key=Value ..." line per
// job record, array tasks carrying ArrayJobId and ArrayTaskId.
func parseScontrolJobs(b []byte) []SlurmTask {
	var out []SlurmTask
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		kv := map[string]string{}
		for _, f := range strings.Fields(sc.Text()) {
			if k, v, ok := strings.Cut(f, "="); ok {
				if _, dup := kv[k]; !dup {
					kv[k] = v
				}
			}
		}
		n, err := strconv.Atoi(kv["ArrayTaskId"])
		if kv["ArrayJobId"] == "" || err != nil {
			continue
		}
		t := SlurmTask{JobID: kv["ArrayJobId"], Index: n, State: kv["JobState"], ExitCode: kv["ExitCode"]}
		if r := kv["Reason"]; r != "None" {
			t.Reason = r
		}
		out = append(out, t)
	}
	return out
}

// Cancel cancels whole jobs (every task of each array) with scancel.
func (s *Slurm) Cancel(ctx context.Context, jobs []string) error {
	if len(jobs) == 0 {
		return nil
	}
	_, err := s.run(ctx, "scancel", jobs...)
	return err
}

// SlurmHooks connect Watch to what the tasks produce.
type SlurmHooks struct {
	// Complete reports whether a task's output is complete. The output, not Slurm's state,
	// decides whether a task did its work.
	Complete func(SlurmTask) bool
	// Finished is called once per task after it has left the queue, with the last state
	// Slurm knows and whether its output is complete.
	Finished func(t SlurmTask, complete bool) error
	// Progress receives every task followed, after each poll that changed something.
	Progress func([]SlurmTask)
}

// Watch follows submitted arrays until every task has left the queue, polling squeue with
// backoff (Config.Poll doubling up to Config.PollMax while nothing changes). A task that has
// left the queue is finished at once when its output is complete; otherwise its final state
// comes from sacct or scontrol, and a COMPLETED task gets CollectGrace for its output to show
// up. When ctx is cancelled, Watch cancels every array (scancel) and returns ctx's error,
// joined with scancel's when that fails (CancelAll).
func (s *Slurm) Watch(ctx context.Context, arrays []SlurmArray, h SlurmHooks) error {
	log := s.log()
	minPoll, maxPoll := pollIntervals(s.Config.Poll, s.Config.PollMax)
	grace := s.CollectGrace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	var jobs []string
	tasks := map[TaskKey]*SlurmTask{}
	var order []TaskKey
	for _, a := range arrays {
		jobs = append(jobs, a.JobID)
		for _, i := range a.Indices {
			k := TaskKey{a.JobID, i}
			tasks[k] = &SlurmTask{JobID: a.JobID, Index: i, State: "PENDING"}
			order = append(order, k)
		}
	}
	left := map[TaskKey]time.Time{} // first time a task was seen out of the queue, incomplete
	done := map[TaskKey]bool{}
	interval := minPoll
	failures := 0
	snapshot := func() []SlurmTask {
		out := make([]SlurmTask, 0, len(order))
		for _, k := range order {
			out = append(out, *tasks[k])
		}
		return out
	}
	for len(done) < len(order) {
		if ctx.Err() != nil {
			return s.CancelAll(jobs, ctx.Err())
		}
		var live []string
		for _, j := range jobs {
			for _, k := range order {
				if k.Job == j && !done[k] {
					live = append(live, j)
					break
				}
			}
		}
		q, err := s.Queue(ctx, live)
		if err != nil {
			if ctx.Err() != nil {
				return s.CancelAll(jobs, ctx.Err())
			}
			failures++
			log.Warn("squeue failed", "engine", NameSlurm, "err", err, "failures", failures)
			if failures >= 10 {
				return fmt.Errorf("slurm: giving up after %d failed status queries: %w", failures, err)
			}
			if err := sleepCtx(ctx, interval); err != nil {
				return s.CancelAll(jobs, err)
			}
			continue
		}
		failures = 0
		changed := false
		var gone []TaskKey
		for _, k := range order {
			if done[k] {
				continue
			}
			t := tasks[k]
			if qt, ok := q[k]; ok && ActiveState(qt.State) {
				if qt.State != t.State || qt.Reason != t.Reason {
					t.State, t.Reason = qt.State, qt.Reason
					changed = true
				}
				continue
			}
			gone = append(gone, k)
		}
		if len(gone) > 0 {
			var final map[TaskKey]SlurmTask
			var gjobs []string
			for _, k := range gone {
				if !slices.Contains(gjobs, k.Job) {
					gjobs = append(gjobs, k.Job)
				}
			}
			final, err = s.Final(ctx, gjobs)
			if err != nil {
				log.Warn("cannot read final task states", "engine", NameSlurm, "err", err)
				final = map[TaskKey]SlurmTask{}
			}
			now := time.Now()
			for _, k := range gone {
				t := tasks[k]
				if ft, ok := final[k]; ok {
					if ActiveState(ft.State) {
						continue // squeue and scontrol disagree for a moment: ask again later
					}
					*t = ft
				} else {
					t.State, t.Reason = "UNKNOWN", "Slurm no longer knows this task"
				}
				complete := h.Complete != nil && h.Complete(*t)
				if !complete && (t.State == "COMPLETED" || t.State == "UNKNOWN") {
					first, seen := left[k]
					if !seen {
						left[k] = now
						continue
					}
					if now.Sub(first) < grace {
						continue
					}
				}
				done[k] = true
				delete(left, k)
				changed = true
				if h.Finished != nil {
					if err := h.Finished(*t, complete); err != nil {
						return s.CancelAll(jobs, err)
					}
				}
			}
		}
		if changed {
			if h.Progress != nil {
				h.Progress(snapshot())
			}
			interval = minPoll
		} else {
			interval = min(2*interval, maxPoll)
		}
		if len(left) > 0 {
			interval = minPoll
		}
		if len(done) < len(order) {
			if err := sleepCtx(ctx, interval); err != nil {
				return s.CancelAll(jobs, err)
			}
		}
	}
	return nil
}

// CancelAll cancels the jobs and returns cause, joined with scancel's error, which names the
// jobs and the command that cancels them. scancel runs detached from sharebench's process
// group and bounded in time (runCleanup): the caller's context is usually the cancelled one,
// and a second Ctrl-C must not kill it half-way.
func (s *Slurm) CancelAll(jobs []string, cause error) error {
	if len(jobs) == 0 {
		return cause
	}
	s.log().Info("cancelling job arrays", "engine", NameSlurm, "jobs", strings.Join(jobs, ","))
	if _, err := runCleanup(cleanupTimeout, NameSlurm, "scancel", jobs); err != nil {
		err = fmt.Errorf("slurm: jobs %s may still be queued or running (%w); cancel them with: scancel %s", strings.Join(jobs, ","), err, strings.Join(jobs, " "))
		s.log().Warn("cannot cancel the job arrays", "engine", NameSlurm, "err", err)
		return errors.Join(cause, err)
	}
	return cause
}
