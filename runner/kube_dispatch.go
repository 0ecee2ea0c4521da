package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/sharebench/sharebench/dispatch"
)

// Kube runs a campaign's cells on Kubernetes through kubectl: one Indexed batch/v1 Job per
// dispatch, one pod per cell with whole GPUs, the campaign in a ConfigMap, results from the
// pods' logs (a Dispatcher).
type Kube struct {
	// Config holds the image, resources, namespace and polling intervals.
	Config KubeConfig
	// Logger receives progress and warnings (nil: discarded).
	Logger *slog.Logger
}

// Name returns "kubernetes".
func (k *Kube) Name() string { return EngineKubernetes }

func (k *Kube) engine() *dispatch.Kube {
	return &dispatch.Kube{Config: k.Config.KubeConfig, Logger: k.Logger}
}

// Probe checks that kubectl runs.
func (k *Kube) Probe(ctx context.Context) error { return k.engine().Probe(ctx) }

// Harvest returns nothing: a restarted dispatcher applies the same Job again (the name is a
// function of the cells), which adopts it, and collects its finished pods' logs.
func (k *Kube) Harvest(context.Context, Work) ([]Result, error) { return nil, nil }

// soloRecords returns the latest solo results of the journal without their runs: what pair
// cells with reuse_solo read in the pods.
func soloRecords(outDir string, c *Campaign) ([]byte, error) {
	records, _, err := ReadJournal(filepath.Join(outDir, JournalFile))
	if err != nil {
		return nil, err
	}
	latest := Latest(records)
	var buf bytes.Buffer
	for _, cell := range c.Cells() {
		r, ok := latest[cell.ID]
		if !ok || cell.Kind != KindSolo {
			continue
		}
		r.Runs = nil
		line, err := MarshalResult(r)
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	return buf.Bytes(), nil
}

// Dispatch applies the ConfigMap and the Indexed Job for w.Cells, follows the pods, reads the
// result record from each finished pod's log, and deletes the Job and ConfigMap at the end.
// With backoffLimit 0 a pod that fails outside the cell's own error handling fails the Job,
// and Kubernetes stops its other pods: those cells stay pending and run on the next dispatch.
// On cancellation it deletes the Job (and so its pods) and returns ctx's error, joined with
// the deletion's when that fails.
func (k *Kube) Dispatch(ctx context.Context, w Work, sink func(Result) error) error {
	c, cells := w.Campaign, w.Cells
	tc := kubeTaskCampaign(k.Config, c)
	campaignJSON, err := marshalIndent(tc)
	if err != nil {
		return fmt.Errorf("runner: kubernetes: campaign %s: %w", c.Name, err)
	}
	if err := checkTaskCampaign(campaignJSON, c); err != nil {
		return fmt.Errorf("runner: kubernetes: %w", err)
	}
	var solo []byte
	if c.ReuseSolo && slices.ContainsFunc(cells, func(x Cell) bool { return x.Kind == KindPair }) {
		if solo, err = soloRecords(w.OutDir, c); err != nil {
			return err
		}
	}
	name := kubeJobName(c, cells)
	status := func(i int, state, reason string) TaskStatus {
		return TaskStatus{Index: cells[i].Index, CellID: cells[i].ID, Task: name + "/" + strconv.Itoa(i), State: state, Reason: reason}
	}
	var ts []TaskStatus
	for i := range cells {
		ts = append(ts, status(i, "Pending", ""))
	}
	w.Track([]string{name}, ts)
	return k.engine().Run(ctx, kubeJob(c, name, cells, campaignJSON, solo), filepath.Join(w.OutDir, KubeDir), dispatch.KubeHooks{
		Ended: func(p dispatch.PodEnd) error {
			r, ok := findResult(p.Log, cells[p.Index].ID)
			if !ok {
				msg := p.Failure
				if p.Phase == "Succeeded" {
					msg += ": its log has no result record"
				}
				r = failedResult(c, cells[p.Index], msg, dispatch.TailLines(p.Log, 20))
			}
			return sink(r)
		},
		Progress: func(i int, phase, reason string) { w.Track(nil, []TaskStatus{status(i, phase, reason)}) },
		NotRun: func(left []int, cond string) {
			var out []TaskStatus
			for _, i := range left {
				out = append(out, status(i, "NotRun", cond))
			}
			w.Track(nil, out)
		},
	})
}
