package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kube runs a campaign's cells on Kubernetes through kubectl: one Indexed batch/v1 Job per
// dispatch, one pod per cell with whole GPUs, the campaign in a ConfigMap, results from the
// pods' logs. It needs no Kubernetes Go module (client-go stays out of the build).
type Kube struct {
	// Config holds the image, resources, namespace and polling intervals.
	Config KubeConfig
	// Logger receives progress and warnings (nil: discarded).
	Logger *slog.Logger
}

// Name returns "kubernetes".
func (k *Kube) Name() string { return EngineKubernetes }

func (k *Kube) log() *slog.Logger {
	if k.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return k.Logger
}

// KubectlArgs returns the kubectl arguments for a command: --context and --namespace first
// when configured.
func (k *Kube) KubectlArgs(args ...string) []string {
	var out []string
	if k.Config.Context != "" {
		out = append(out, "--context="+k.Config.Context)
	}
	if k.Config.Namespace != "" {
		out = append(out, "--namespace="+k.Config.Namespace)
	}
	return append(out, args...)
}

func (k *Kube) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return tool(ctx, EngineKubernetes, cmpOrString(k.Config.Kubectl, "kubectl"), k.KubectlArgs(args...), stdin)
}

// Probe checks that kubectl runs.
func (k *Kube) Probe(ctx context.Context) error {
	_, err := tool(ctx, EngineKubernetes, cmpOrString(k.Config.Kubectl, "kubectl"), []string{"version", "--client"}, nil)
	return err
}

// Harvest returns nothing: a restarted dispatcher applies the same Job again (the name is a
// function of the cells), which adopts it, and collects its finished pods' logs.
func (k *Kube) Harvest(context.Context, Work) ([]Result, error) { return nil, nil }

// kubePod is the part of a pod that the dispatcher reads.
type kubePod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Phase             string `json:"phase"`
		Reason            string `json:"reason"`
		Message           string `json:"message"`
		ContainerStatuses []struct {
			State struct {
				Waiting *struct {
					Reason  string `json:"reason"`
					Message string `json:"message"`
				} `json:"waiting"`
				Terminated *struct {
					ExitCode int    `json:"exitCode"`
					Reason   string `json:"reason"`
					Message  string `json:"message"`
				} `json:"terminated"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// index returns the pod's completion index, -1 if it has none.
func (p kubePod) index() int {
	for _, m := range []map[string]string{p.Metadata.Annotations, p.Metadata.Labels} {
		if v, ok := m["batch.kubernetes.io/job-completion-index"]; ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return -1
}

// waiting returns the reason the pod's container waits (ImagePullBackOff, ...), if any.
func (p kubePod) waiting() string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return w.Reason
		}
	}
	return p.Status.Reason
}

// failure describes why a finished pod has no result.
func (p kubePod) failure() string {
	var parts []string
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s exit code %d %s", t.Reason, t.ExitCode, t.Message)))
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
	}
	msg := fmt.Sprintf("kubernetes: pod %s %s", p.Metadata.Name, p.Status.Phase)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	if p.Status.Phase == "Succeeded" {
		msg += ": its log has no result record"
	}
	return msg
}

// kubeJobStatus is the part of a Job's status that the dispatcher reads.
type kubeJobStatus struct {
	Status struct {
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"status"`
}

// ended returns the Job's final condition ("Complete" or "Failed" with its reason), if any.
func (j kubeJobStatus) ended() (string, bool) {
	for _, c := range j.Status.Conditions {
		if c.Status == "True" && (c.Type == "Complete" || c.Type == "Failed") {
			return strings.TrimSpace(c.Type + " " + c.Reason + " " + c.Message), true
		}
	}
	return "", false
}

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
// On cancellation it deletes the Job (and so its pods) and returns ctx's error.
func (k *Kube) Dispatch(ctx context.Context, w Work, sink func(Result) error) error {
	c, log := w.Campaign, w.Logger
	cells := w.Cells
	dir := filepath.Join(w.OutDir, KubeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("runner: kubernetes: %w", err)
	}
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
	manifest, err := marshalIndent(kubeManifest(k.Config, c, name, cells, campaignJSON, solo))
	if err != nil {
		return fmt.Errorf("runner: kubernetes: %w", err)
	}
	if len(manifest) > 900<<10 {
		return fmt.Errorf("runner: kubernetes: the manifest of %s is %d bytes; a ConfigMap holds at most 1 MiB", name, len(manifest))
	}
	if err := WriteFileAtomic(filepath.Join(dir, name+".json"), manifest); err != nil {
		return fmt.Errorf("runner: kubernetes: %w", err)
	}
	if _, err := k.kubectl(ctx, manifest, "apply", "-f", "-"); err != nil {
		return err
	}
	log.Info("applied indexed job", "engine", EngineKubernetes, "job", name, "cells", len(cells))
	status := func(i int, state, reason string) TaskStatus {
		return TaskStatus{Index: cells[i].Index, CellID: cells[i].ID, Task: name + "/" + strconv.Itoa(i), State: state, Reason: reason}
	}
	var ts []TaskStatus
	for i := range cells {
		ts = append(ts, status(i, "Pending", ""))
	}
	w.Track([]string{name}, ts)

	minPoll, maxPoll := k.Config.Poll.D(), k.Config.PollMax.D()
	if minPoll <= 0 {
		minPoll = 5 * time.Second
	}
	if maxPoll <= 0 {
		maxPoll = 60 * time.Second
	}
	maxPoll = max(maxPoll, minPoll)
	interval := minPoll
	done := map[int]bool{}
	seen := map[int]string{} // last state tracked per index
	warned := map[string]bool{}
	failures := 0
	for len(done) < len(cells) {
		if ctx.Err() != nil {
			return k.cancel(name, ctx.Err())
		}
		out, err := k.kubectl(ctx, nil, "get", "pods", "--selector=job-name="+name, "--output=json")
		var pods struct {
			Items []kubePod `json:"items"`
		}
		if err == nil {
			err = json.Unmarshal(out, &pods)
		}
		if err != nil {
			if ctx.Err() != nil {
				return k.cancel(name, ctx.Err())
			}
			failures++
			log.Warn("kubectl get pods failed", "engine", EngineKubernetes, "err", err, "failures", failures)
			if failures >= 10 {
				return k.cancel(name, fmt.Errorf("runner: kubernetes: giving up after %d failed status queries: %w", failures, err))
			}
			if err := sleepCtx(ctx, interval); err != nil {
				return k.cancel(name, err)
			}
			continue
		}
		failures = 0
		slices.SortFunc(pods.Items, func(a, b kubePod) int {
			if a.index() != b.index() {
				return a.index() - b.index()
			}
			return strings.Compare(a.Metadata.Name, b.Metadata.Name)
		})
		changed, live := false, 0
		var updates []TaskStatus
		for _, p := range pods.Items {
			i := p.index()
			if i < 0 || i >= len(cells) || done[i] {
				continue
			}
			switch p.Status.Phase {
			case "Succeeded", "Failed":
				logs, lerr := k.kubectl(ctx, nil, "logs", p.Metadata.Name)
				if lerr != nil {
					log.Warn("cannot read a pod's log", "engine", EngineKubernetes, "pod", p.Metadata.Name, "err", lerr)
				}
				if werr := WriteFileAtomic(filepath.Join(dir, p.Metadata.Name+".log"), logs); werr != nil {
					log.Warn("cannot keep a pod's log", "engine", EngineKubernetes, "pod", p.Metadata.Name, "err", werr)
				}
				r, ok := findResult(logs, cells[i].ID)
				if !ok {
					r = failedResult(c, cells[i], p.failure(), tailLines(logs, 20))
				}
				updates = append(updates, status(i, p.Status.Phase, ""))
				done[i], changed = true, true
				if err := sink(r); err != nil {
					return k.cancel(name, err)
				}
			default:
				live++
				reason := ""
				if p.Status.Phase != "Running" {
					reason = p.waiting()
				}
				if reason != "" && !warned[p.Metadata.Name+reason] && reason != "Unschedulable" {
					warned[p.Metadata.Name+reason] = true
					log.Warn("pod waits", "engine", EngineKubernetes, "pod", p.Metadata.Name, "reason", reason)
				}
				if st := p.Status.Phase + "|" + reason; seen[i] != st {
					seen[i], changed = st, true
					updates = append(updates, status(i, cmpOrString(p.Status.Phase, "Pending"), reason))
				}
			}
		}
		if len(updates) > 0 {
			w.Track(nil, updates)
		}
		if len(done) == len(cells) {
			break
		}
		if live == 0 {
			jb, jerr := k.kubectl(ctx, nil, "get", "job", name, "--output=json")
			var js kubeJobStatus
			if jerr == nil && json.Unmarshal(jb, &js) == nil {
				if cond, ended := js.ended(); ended {
					var left []TaskStatus
					for i := range cells {
						if !done[i] {
							left = append(left, status(i, "NotRun", cond))
						}
					}
					w.Track(nil, left)
					log.Warn("the job ended before all its cells ran; they stay pending and run on the next dispatch",
						"engine", EngineKubernetes, "job", name, "condition", cond, "cells", len(left))
					break
				}
			}
		}
		if changed {
			interval = minPoll
		} else {
			interval = min(2*interval, maxPoll)
		}
		if err := sleepCtx(ctx, interval); err != nil {
			return k.cancel(name, err)
		}
	}
	k.remove(name)
	return nil
}

// remove deletes the Job (its pods go with it) and the ConfigMap, with a fresh bounded
// context.
func (k *Kube) remove(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := k.kubectl(ctx, nil, "delete", "job,configmap", name, "--ignore-not-found", "--wait=false")
	if err != nil {
		k.log().Warn("cannot delete the job", "engine", EngineKubernetes, "job", name, "err", err)
	}
	return err
}

// cancel deletes the Job and returns cause.
func (k *Kube) cancel(name string, cause error) error {
	k.log().Info("deleting the job", "engine", EngineKubernetes, "job", name)
	k.remove(name)
	return cause
}
