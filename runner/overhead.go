package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
)

// OverheadReport compares a fixed-step workload run read by the harness (the parser on a
// pipe, as in every measurement) with the same run writing its stdout straight to a file,
// parsed afterwards. Times are medians over the repeats.
type OverheadReport struct {
	Steps   int `json:"steps"`
	Repeats int `json:"repeats"`
	// HarnessSpanMs and DirectSpanMs are first step start to last step end.
	HarnessSpanMs float64 `json:"harness_span_ms"`
	DirectSpanMs  float64 `json:"direct_span_ms"`
	// HarnessStepMs and DirectStepMs are median step times from t0_ns/t1_ns.
	HarnessStepMs float64 `json:"harness_step_ms"`
	DirectStepMs  float64 `json:"direct_step_ms"`
	// LoggedStepMs is the median of the workload's own step_ms in the harness runs.
	LoggedStepMs float64 `json:"logged_step_ms"`
	// SpanOverheadPct = HarnessSpan/DirectSpan − 1 and StepOverheadPct likewise, in percent;
	// TimestampVsLoggedPct compares the runner's step times with the workload's step_ms.
	SpanOverheadPct      float64 `json:"span_overhead_pct"`
	StepOverheadPct      float64 `json:"step_overhead_pct"`
	TimestampVsLoggedPct float64 `json:"timestamp_vs_logged_pct"`
}

// MeasureOverhead runs the campaign's first configuration for steps measured steps,
// alternating harness and direct runs repeats times each (ABAB), on the local host.
func MeasureOverhead(ctx context.Context, c *Campaign, outDir string, steps, repeats int) (OverheadReport, error) {
	rep := OverheadReport{Steps: steps, Repeats: repeats}
	oc := selftestCampaign(c, "overhead")
	oc.Workload.MaxSteps = steps
	oc.Window = Window{MinSteps: 1 << 20, MinSeconds: 1e9, FloorSteps: 1, Trim: 0, MaxSeconds: 3600}
	if err := oc.Resolve(); err != nil {
		return rep, err
	}
	cell := oc.Cells()[0]
	var hSpan, dSpan, hStep, dStep, logged []float64
	for r := 0; r < repeats; r++ {
		res, files, err := selftestRun(ctx, oc, SelftestOptions{Backend: &Local{}, OutDir: outDir})
		if err != nil {
			return rep, err
		}
		if res.Status != StatusOK || len(files) == 0 {
			return rep, fmt.Errorf("runner: overhead: harness run: %s: %s", res.Status, res.Reason)
		}
		st, err := readSteps(files[0])
		if err != nil {
			return rep, err
		}
		hSpan, hStep = append(hSpan, span(st)), append(hStep, medianStep(st))
		lg := make([]float64, len(st))
		for i, s := range st {
			lg[i] = s.StepMs
		}
		logged = append(logged, Median(lg))

		direct := filepath.Join(outDir, "overhead", "direct-"+strconv.Itoa(r)+".jsonl")
		st, err = runDirect(ctx, oc, cell, direct)
		if err != nil {
			return rep, err
		}
		dSpan, dStep = append(dSpan, span(st)), append(dStep, medianStep(st))
	}
	rep.HarnessSpanMs, rep.DirectSpanMs = Median(hSpan), Median(dSpan)
	rep.HarnessStepMs, rep.DirectStepMs, rep.LoggedStepMs = Median(hStep), Median(dStep), Median(logged)
	rep.SpanOverheadPct = 100 * (rep.HarnessSpanMs/rep.DirectSpanMs - 1)
	rep.StepOverheadPct = 100 * (rep.HarnessStepMs/rep.DirectStepMs - 1)
	rep.TimestampVsLoggedPct = 100 * (rep.HarnessStepMs/rep.LoggedStepMs - 1)
	return rep, nil
}

// runDirect runs the workload with stdout going to a file (nobody reads it while it runs),
// "go" written at once and stdin held open until the step cap ends the run.
func runDirect(ctx context.Context, c *Campaign, cell Cell, path string) ([]Step, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	rc := &runCtx{c: c, cell: cell}
	spec := rc.spec(&child{m: cell.A, runID: "overhead-direct"}, "")
	argv := append(slices.Clone(spec.Program), spec.Args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = mergeEnv(os.Environ(), spec.Env)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("runner: overhead: %w", err)
	}
	io.WriteString(stdin, CmdGo+"\n")
	err = cmd.Wait()
	stdin.Close()
	if err != nil {
		return nil, fmt.Errorf("runner: overhead: direct run: %w: %s", err, tailString(stderr.String(), 500))
	}
	return readSteps(path)
}

func readSteps(path string) ([]Step, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := NewParser(bytes.NewReader(data))
	var st []Step
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Event == EventStep {
			st = append(st, Step{T0Ns: e.T0Ns, T1Ns: e.T1Ns, StepMs: e.StepMs, Samples: e.Samples})
		}
	}
	if len(st) == 0 {
		return nil, fmt.Errorf("runner: overhead: %s has no steps", path)
	}
	return st, nil
}

func span(st []Step) float64 { return float64(st[len(st)-1].T1Ns-st[0].T0Ns) / 1e6 }

func medianStep(st []Step) float64 {
	d := make([]float64, len(st))
	for i, s := range st {
		d[i] = s.Ms()
	}
	return Median(d)
}
