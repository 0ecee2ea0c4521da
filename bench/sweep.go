package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// SweepOptions configures Sweep.
type SweepOptions struct {
	// Jobs is the number of runs executed at once; 0 means GOMAXPROCS.
	Jobs int
	// RunTimeout, when positive, fails a run that takes longer (recorded like any failure).
	RunTimeout time.Duration
	// Progress receives progress reports (stderr); nil is silent. Reports carry wall-clock
	// times and are never part of the outputs.
	Progress io.Writer
	// Terminal draws a one-line progress bar with an ETA instead of one line per run.
	Terminal bool
}

// Outcome is the result of one run of a sweep.
type Outcome struct {
	// Run is the run.
	Run *RunSpec
	// Err is the run's failure, nil on success.
	Err error
	// Elapsed is the run's wall time, for progress reports only.
	Elapsed time.Duration
}

// Sweep executes runs in parallel (errgroup, at most opt.Jobs at once), each writing its own
// directory below outRoot. A failing run is an Outcome with an error, recorded in its
// directory (failure.json); it does not stop the others. The outcomes are in the order of
// runs. The error is non-nil only when ctx is cancelled.
func Sweep(ctx context.Context, in *Inputs, runs []RunSpec, outRoot string, opt SweepOptions) ([]Outcome, error) {
	n := opt.Jobs
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	out := make([]Outcome, len(runs))
	prog := newProgress(opt.Progress, opt.Terminal, len(runs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	in.memo.add(runs)
	for _, i := range startOrder(in, runs) {
		r := &runs[i]
		g.Go(func() error {
			defer in.memo.done(r)
			if gctx.Err() != nil {
				return gctx.Err()
			}
			start := time.Now()
			err := runOne(gctx, in, r, outRoot, opt.RunTimeout)
			if err != nil && gctx.Err() != nil {
				return gctx.Err()
			}
			out[i] = Outcome{Run: r, Err: err, Elapsed: time.Since(start)}
			prog.done(out[i])
			return nil
		})
	}
	err := g.Wait()
	prog.finish(out)
	if err != nil {
		return out, fmt.Errorf("bench: sweep interrupted: %w", err)
	}
	return out, nil
}

// startOrder is the order in which Sweep starts runs: largest trace first (in bytes of its file,
// or about 100 bytes per generated job), plan order among equals. A run takes time roughly with
// its trace, and a long run started last would run alone at the end of the sweep.
func startOrder(in *Inputs, runs []RunSpec) []int {
	size := make([]int64, len(runs))
	files := map[string]int64{} // by input name: the runs of a file share it
	for i := range runs {
		t := &runs[i].Trace
		switch {
		case t.Gen != nil:
			size[i] = int64(t.Gen.Jobs) * 100
		case t.File != "":
			n, ok := files[t.File]
			if !ok {
				if p, err := in.env.Path(t.File); err == nil {
					if fi, err := os.Stat(p); err == nil {
						n = fi.Size()
					}
				}
				files[t.File] = n
			}
			size[i] = n
		}
	}
	order := make([]int, len(runs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(size[b], size[a]) })
	return order
}

// runOne executes r with an optional time limit; a run that exceeds it is recorded as failed.
func runOne(ctx context.Context, in *Inputs, r *RunSpec, outRoot string, limit time.Duration) error {
	if limit <= 0 {
		return r.RunWith(ctx, in, outRoot)
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := r.RunWith(rctx, in, outRoot)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		f := Failure{ID: r.ID, Error: fmt.Sprintf("run exceeded the time limit of %v (--run-timeout)", limit)}
		if werr := writeFailure(r.Dir(outRoot), f); werr != nil {
			return errors.Join(errors.New(f.Error), werr)
		}
		return errors.New(f.Error)
	}
	return err
}

// progress reports a sweep's progress on a writer: a redrawn bar on a terminal, plain lines
// otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	total    int
	start    time.Time
	mu       sync.Mutex
	n, fails int
}

func newProgress(w io.Writer, terminal bool, total int) *progress {
	return &progress{w: w, terminal: terminal, total: total, start: time.Now()}
}

func (p *progress) done(o Outcome) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if o.Err != nil {
		p.fails++
	}
	elapsed := time.Since(p.start)
	eta := time.Duration(float64(elapsed) / float64(p.n) * float64(p.total-p.n))
	if p.terminal {
		if o.Err != nil {
			fmt.Fprintf(p.w, "\r\033[KFAIL %s: %v\n", o.Run.ID, o.Err)
		}
		const width = 30
		fill := width * p.n / max(p.total, 1)
		fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d runs, %d failed, elapsed %s, ETA %s  %s",
			strings.Repeat("#", fill), strings.Repeat(" ", width-fill), p.n, p.total, p.fails,
			clock(elapsed), clock(eta), o.Run.ID)
		return
	}
	status := "ok  "
	if o.Err != nil {
		status = "FAIL"
	}
	fmt.Fprintf(p.w, "[%*d/%d] %s %s (%.1f s)", len(fmt.Sprint(p.total)), p.n, p.total, status, o.Run.ID, o.Elapsed.Seconds())
	if o.Err != nil {
		fmt.Fprintf(p.w, ": %v", o.Err)
	}
	fmt.Fprintln(p.w)
}

// finish ends the bar and names the slowest runs, so that a slow simulation is visible.
func (p *progress) finish(out []Outcome) {
	if p.w == nil {
		return
	}
	if p.terminal && p.n > 0 {
		fmt.Fprintln(p.w)
	}
	var ran []Outcome
	for _, o := range out {
		if o.Run != nil {
			ran = append(ran, o)
		}
	}
	slices.SortStableFunc(ran, func(a, b Outcome) int { return cmp.Compare(b.Elapsed, a.Elapsed) })
	fmt.Fprintf(p.w, "%d runs in %s (%d failed)", len(ran), clock(time.Since(p.start)), p.fails)
	if len(ran) > 0 {
		fmt.Fprint(p.w, "; slowest:")
		for _, o := range ran[:min(5, len(ran))] {
			fmt.Fprintf(p.w, " %s %.1f s;", o.Run.ID, o.Elapsed.Seconds())
		}
	}
	fmt.Fprintln(p.w)
}

// clock formats a duration as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
