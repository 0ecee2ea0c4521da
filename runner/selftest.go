package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/sharebench/sharebench/runner/gpu"
)

// SelftestOptions configures Selftest.
type SelftestOptions struct {
	// Campaign supplies the workload settings (python, script, device, tiny, threads,
	// timeouts) and the single model to run (Models[0], its first batch and sub-batch).
	Campaign *Campaign
	Backend  Backend
	Sampler  gpu.Sampler
	// OutDir receives the raw files of the two runs.
	OutDir string
	Logger *slog.Logger
}

// SelftestStep is one check of the selftest.
type SelftestStep struct {
	Name     string        `json:"name"`
	OK       bool          `json:"ok"`
	Detail   string        `json:"detail"`
	Duration time.Duration `json:"duration_ns"`
}

// Selftest checks the path from the runner to the workload on this host (the device check
// runs it first): a protocol round trip with train.py --dry-run (every line re-encodes to
// itself, events arrive in order, accum micro-steps per step, step_ms matches the
// timestamps), then a 3-step real run ending at the step cap. It returns the steps and an error if any failed.
func Selftest(ctx context.Context, opt SelftestOptions) ([]SelftestStep, error) {
	if opt.Campaign == nil || len(opt.Campaign.Models) == 0 || opt.Backend == nil {
		return nil, errors.New("runner: selftest: need a campaign with a model and a backend")
	}
	var steps []SelftestStep
	var errs []error
	check := func(name string, f func() (string, error)) {
		t0 := time.Now()
		detail, err := f()
		st := SelftestStep{Name: name, OK: err == nil, Detail: detail, Duration: time.Since(t0)}
		if err != nil {
			st.Detail = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		steps = append(steps, st)
	}
	check("protocol round trip (--dry-run)", func() (string, error) {
		c := selftestCampaign(opt.Campaign, "selftest-dry-run")
		c.Workload.Args = append(c.Workload.Args, "--dry-run")
		c.Window = Window{MinSteps: 20, MinSeconds: 60, FloorSteps: 5, Trim: 2, MaxSeconds: 30}
		res, files, err := selftestRun(ctx, c, opt)
		if err != nil {
			return "", err
		}
		if res.Status != StatusOK {
			return "", fmt.Errorf("%s: %s\n%s", res.Status, res.Reason, res.StderrTail)
		}
		var n int
		for _, f := range files {
			k, err := checkStream(f)
			if err != nil {
				return "", err
			}
			n += k
		}
		m := res.Members[0]
		return fmt.Sprintf("%d steps, median %.3f ms (workload's step_ms %.3f ms), stream re-encodes exactly (%d lines)", m.Steps, m.StepMs.Median, m.LoggedStepMs, n), nil
	})
	check("real run (3 steps)", func() (string, error) {
		c := selftestCampaign(opt.Campaign, "selftest-real")
		c.Workload.MaxSteps = 3
		c.Window = Window{MinSteps: 1 << 20, MinSeconds: math.MaxInt32, FloorSteps: 1, Trim: 0, MaxSeconds: 600}
		res, files, err := selftestRun(ctx, c, opt)
		if err != nil {
			return "", err
		}
		if res.Status != StatusOK {
			return "", fmt.Errorf("%s: %s\n%s", res.Status, res.Reason, res.StderrTail)
		}
		m := res.Members[0]
		if m.Steps != 3 {
			return "", fmt.Errorf("got %d steps, want 3 (the step cap)", m.Steps)
		}
		if _, err := checkStream(files[0]); err != nil {
			return "", err
		}
		s := m.start
		dev, torch := "", ""
		if s != nil {
			dev, torch = firstNonEmpty(s.GPU, s.Device), s.Torch
		}
		return fmt.Sprintf("%s on %s (torch %s, impl %s): 3 steps, median %.1f ms, warm-up %d steps in %.1f s, peak reserved %d bytes (%s)",
			m.Member, dev, torch, m.Impl, m.StepMs.Median, m.WarmupSteps, m.WarmupS, m.MemReservedBytes, m.MemSource), nil
	})
	return steps, errors.Join(errs...)
}

// selftestCampaign derives a one-model, one-repeat, fast campaign from the template.
func selftestCampaign(tmpl *Campaign, name string) *Campaign {
	c := *tmpl
	c.Name = name
	m := tmpl.Models[0]
	b := m.Batches[0]
	sub := m.subBatches(b, max(tmpl.SubBatchLevels, 2))
	c.Models = []ModelSpec{{Name: m.Name, Batches: []int{b}, SubBatches: []int{sub[len(sub)-1]}, SeqLen: m.SeqLen, ImageSize: m.ImageSize, Args: m.Args, MinSubBatch: 1}}
	c.Repeats = 1
	c.Pairs, c.SoloOnly = nil, true
	c.Warmup = Warmup{Steps: 2, Seconds: 0.01}
	c.Workload.Args = append([]string{}, tmpl.Workload.Args...)
	return &c
}

// selftestRun runs the campaign's single solo run and returns it with its events files.
func selftestRun(ctx context.Context, c *Campaign, opt SelftestOptions) (RunResult, []string, error) {
	if err := c.Resolve(); err != nil {
		return RunResult{}, nil, err
	}
	cell := c.Cells()[0]
	rc := &runCtx{c: c, cell: cell, backend: opt.Backend, sampler: opt.Sampler, gpus: c.GPUs[:1], outDir: opt.OutDir,
		cellDir: filepath.Join(opt.OutDir, c.Name), log: opt.Logger}
	if rc.log == nil {
		rc.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(rc.cellDir, 0o755); err != nil {
		return RunResult{}, nil, err
	}
	res, err := rc.execute(ctx, plans(c, cell, 1)[0])
	var events []string
	for _, f := range res.Files {
		if filepath.Ext(f) == ".jsonl" && bytes.HasSuffix([]byte(f), []byte(".events.jsonl")) {
			events = append(events, filepath.Join(opt.OutDir, f))
		}
	}
	return res, events, err
}

// checkStream verifies a recorded protocol stream: every line parses and re-encodes to a
// line that parses to the same event; events come in protocol order; step indices count
// from 0; each step has accum micro-steps and step_ms within 1 µs of (t1_ns − t0_ns)/1e6.
func checkStream(path string) (lines int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	p := NewParser(bytes.NewReader(data))
	accum, next := 0, 0
	var order []string
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return lines, err
		}
		lines++
		line := AppendLine(nil, e)
		e2, err := NewParser(bytes.NewReader(line)).Next()
		if err != nil {
			return lines, fmt.Errorf("re-encoded line does not parse: %v", err)
		}
		if !bytes.Equal(AppendLine(nil, e2), line) {
			return lines, fmt.Errorf("line %d does not survive a round trip", lines)
		}
		if len(order) == 0 || order[len(order)-1] != e.Event {
			order = append(order, e.Event)
		}
		switch e.Event {
		case EventStart:
			accum = e.Accum
		case EventStep:
			if e.I != next {
				return lines, fmt.Errorf("step index %d, want %d", e.I, next)
			}
			next++
			if accum > 0 && len(e.MicroMs) != accum {
				return lines, fmt.Errorf("step %d: %d micro-steps, want accum = %d", e.I, len(e.MicroMs), accum)
			}
			if d := math.Abs(e.StepMs - float64(e.T1Ns-e.T0Ns)/1e6); d > 1e-3 {
				return lines, fmt.Errorf("step %d: step_ms %.6f differs from (t1_ns - t0_ns)/1e6 by %.6f ms", e.I, e.StepMs, d)
			}
		}
	}
	want := []string{EventStart, EventReady, EventStep, EventMem, EventDone}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		return lines, fmt.Errorf("event order %v, want %v", order, want)
	}
	return lines, nil
}
