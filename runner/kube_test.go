package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/dispatch"
	"github.com/sharebench/sharebench/internal/golden"
)

// The Kubernetes engine was not run against a real cluster here: these tests check the
// manifests (golden) and the submit/watch/collect logic against a fake kubectl
// (testdata/kube/kubectl) that records its arguments and serves canned answers.

const kubeGoldenCampaign = `
name: H200_pairs.v2
backend: local
repeats: 3
max_repeats: 3
reuse_solo: true
models:
  - {name: resnet50, batches: [64]}
  - {name: vgg16, batches: [32]}
pairs: [[resnet50, vgg16]]
kubernetes:
  namespace: gpu-lab
  image: registry.example.org/sharebench-harness:1.0
  gpu_product: NVIDIA-H200
  parallelism: 2
  cpu: "8"
  memory: 64Gi
  service_account: profiler
`

func TestKubeManifestGolden(t *testing.T) {
	t.Parallel()
	c := mustParse(t, kubeGoldenCampaign)
	cells := c.Cells()
	tc := kubeTaskCampaign(c.Kubernetes, c)
	if tc.Workload.Script != "/opt/sharebench/train.py" || tc.Workload.Python != "python3" || c.Workload.Script != "workloads/train.py" {
		t.Fatalf("task campaign: script %q python %q (original %q)", tc.Workload.Script, tc.Workload.Python, c.Workload.Script)
	}
	name := kubeJobName(c, cells[2:])
	if !dispatch.DNSLabel(name) {
		t.Fatalf("job name %q is not a DNS label", name)
	}
	solo := []byte(`{"record":"cell","cell":{"index":0}}` + "\n")
	b, err := (&dispatch.Kube{Config: c.Kubernetes.KubeConfig}).Manifest(kubeJob(c, name, cells[2:], []byte("{campaign}"), solo))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "kube", "job.json.golden"), b)
	if name2 := kubeJobName(c, cells[2:]); name2 != name {
		t.Errorf("job name not stable: %s, %s", name, name2)
	}
	if other := kubeJobName(c, cells[1:]); other == name {
		t.Errorf("different cells give the same job name %s", name)
	}
}

// fakeKubectl installs testdata/kube/kubectl first on PATH and returns its state directory.
func fakeKubectl(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "kube", "kubectl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_KUBE", dir)
	return dir
}

// kpod is a pod as the fake kubectl reports it.
type kpod struct {
	name, phase, waiting, termReason string
	index, exit                      int
}

func writePods(t *testing.T, path string, pods ...kpod) {
	t.Helper()
	var items []any
	for _, p := range pods {
		state := map[string]any{}
		switch {
		case p.waiting != "":
			state["waiting"] = map[string]any{"reason": p.waiting}
		case p.phase == "Running":
			state["running"] = map[string]any{"startedAt": "2026-01-01T00:00:00Z"}
		case p.phase == "Succeeded" || p.phase == "Failed":
			state["terminated"] = map[string]any{"exitCode": p.exit, "reason": p.termReason}
		}
		items = append(items, map[string]any{
			"metadata": map[string]any{"name": p.name, "annotations": map[string]any{"batch.kubernetes.io/job-completion-index": strconv.Itoa(p.index)}},
			"status":   map[string]any{"phase": p.phase, "containerStatuses": []any{map[string]any{"name": "cell", "state": state}}},
		})
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const kubeFakeCampaign = `
name: kube-fake
backend: fake
repeats: 1
max_repeats: 1
warmup: {steps: 1, seconds: 0}
window: {min_steps: 3, min_seconds: 0, floor_steps: 2, trim: 0, max_seconds: 10}
telemetry: none
models: [{name: a, batches: [8]}, {name: b, batches: [8]}, {name: c, batches: [8]}]
pairs: [[a, b]]
fake: {default_step_ms: 2}
kubernetes: {poll: 10ms, poll_max: 20ms}
`

// TestKubeDispatch resumes a campaign whose first cell a local run recorded: the Job covers
// the three other cells (completion index i runs the i-th of them), pods move from Pending to
// Running to Succeeded, one pod is OOMKilled without printing a result, and the results come
// from the pods' logs into the same journal.
func TestKubeDispatch(t *testing.T) {
	fk := fakeKubectl(t)
	c := mustParse(t, kubeFakeCampaign)
	cells := c.Cells() // a, b, c, a+b
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Real results from the fake workload: cell 0 is in the journal (the local run), cells
	// 1 and 3 print theirs in their pods' logs.
	fb := fakeBackend(c.Fake)
	results := map[int]Result{}
	for _, i := range []int{0, 1, 3} {
		r, err := RunCell(ctx, c, i, fb, CellOptions{OutDir: t.TempDir()})
		if err != nil || r.Status != StatusOK {
			t.Fatalf("cell %d: %v %s %s", i, err, r.Status, r.Reason)
		}
		results[i] = r
	}
	j, err := OpenJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(results[0]); err != nil {
		t.Fatal(err)
	}
	j.Close()
	for pod, i := range map[string]int{"p0": 1, "p2": 3} {
		line, _ := MarshalResult(results[i])
		log := "time=2026-01-01T00:00:00Z level=INFO msg=\"cell started\"\n" + string(line)
		if pod == "p2" {
			log += "time=2026-01-01T00:00:09Z level=WARN msg=\"a line on stderr after the result\"\n"
		}
		if err := os.WriteFile(filepath.Join(fk, "logs", pod+".log"), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(fk, "logs", "p1.log"), []byte("time=2026-01-01T00:00:00Z level=INFO msg=\"cell started\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writePods(t, filepath.Join(fk, "pods-1.json"))
	writePods(t, filepath.Join(fk, "pods-2.json"),
		kpod{name: "p0", index: 0, phase: "Pending", waiting: "ContainerCreating"},
		kpod{name: "p1", index: 1, phase: "Pending", waiting: "ImagePullBackOff"},
		kpod{name: "p2", index: 2, phase: "Pending"})
	writePods(t, filepath.Join(fk, "pods-3.json"),
		kpod{name: "p0", index: 0, phase: "Running"},
		kpod{name: "p1", index: 1, phase: "Running"},
		kpod{name: "p2", index: 2, phase: "Pending"})
	writePods(t, filepath.Join(fk, "pods-4.json"),
		kpod{name: "p0", index: 0, phase: "Succeeded"},
		kpod{name: "p1", index: 1, phase: "Failed", termReason: "OOMKilled", exit: 137},
		kpod{name: "p2", index: 2, phase: "Running"})
	writePods(t, filepath.Join(fk, "pods-5.json"),
		kpod{name: "p0", index: 0, phase: "Succeeded"},
		kpod{name: "p1", index: 1, phase: "Failed", termReason: "OOMKilled", exit: 137},
		kpod{name: "p2", index: 2, phase: "Succeeded"})

	k := &Kube{Config: c.Kubernetes}
	sum, err := Dispatch(ctx, c, DispatchOptions{OutDir: out, Dispatcher: k, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || sum.Ran != 3 || sum.Cells.OK != 3 || sum.Cells.Failed != 1 {
		t.Errorf("summary %+v", sum)
	}
	// The manifest: an indexed Job over cells 1, 2 and 3.
	var applied struct {
		Items []json.RawMessage `json:"items"`
	}
	b, err := os.ReadFile(filepath.Join(fk, "applied.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &applied); err != nil || len(applied.Items) != 2 {
		t.Fatalf("applied manifest: %v\n%s", err, b)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	var job struct {
		Metadata struct{ Name string } `json:"metadata"`
		Spec     struct {
			Completions    int
			CompletionMode string
			BackoffLimit   int
		} `json:"spec"`
	}
	if err := json.Unmarshal(applied.Items[0], &cm); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(applied.Items[1], &job); err != nil {
		t.Fatal(err)
	}
	if cm.Data["cells.txt"] != "1\n2\n3\n" || job.Spec.Completions != 3 || job.Spec.CompletionMode != "Indexed" || job.Spec.BackoffLimit != 0 {
		t.Errorf("job over the wrong cells: cells.txt %q, completions %d", cm.Data["cells.txt"], job.Spec.Completions)
	}
	back, err := ParseCampaign([]byte(cm.Data["campaign.json"]), "campaign.json")
	if err != nil || back.Cells()[3].ID != cells[3].ID {
		t.Errorf("the ConfigMap's campaign does not reproduce the cell IDs: %v", err)
	}
	// The journal: the local record, then the three pods' results.
	records, _, err := ReadJournal(filepath.Join(out, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range records {
		got = append(got, strconv.Itoa(r.Cell.Index)+" "+string(r.Status)+" "+r.Reason)
	}
	want := []string{
		"0 ok ",
		"1 ok ",
		"2 failed kubernetes: pod p1 Failed: OOMKilled exit code 137",
		"3 ok ",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("journal (-want +got):\n%s", d)
	}
	calls, _ := os.ReadFile(filepath.Join(fk, "calls"))
	for _, w := range []string{
		"kubectl apply -f -",
		"kubectl get pods --selector=job-name=" + job.Metadata.Name + " --output=json",
		"kubectl logs p0", "kubectl logs p1", "kubectl logs p2",
		"kubectl delete job,configmap " + job.Metadata.Name + " --ignore-not-found --wait=false",
	} {
		if !strings.Contains(string(calls), w+"\n") {
			t.Errorf("no call %q in:\n%s", w, calls)
		}
	}
	for _, f := range []string{DispatchFile, ProfileFile, CellsFile, ManifestFile, filepath.Join(KubeDir, job.Metadata.Name+".json"), filepath.Join(KubeDir, "p1.log")} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	rep, err := CampaignStatus(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts.OK != 3 || rep.Counts.Failed != 1 || rep.Engine != EngineKubernetes || rep.Cells[2].Where != EngineKubernetes+" "+job.Metadata.Name+"/1" {
		t.Errorf("status: %+v, cell 2 where %q", rep.Counts, rep.Cells[2].Where)
	}
}

// TestKubeJobFailed: with backoffLimit 0 a failed pod fails the Job and Kubernetes stops the
// others; the cells that never ran stay pending (no record) for the next dispatch.
func TestKubeJobFailed(t *testing.T) {
	fk := fakeKubectl(t)
	c := mustParse(t, kubeFakeCampaign)
	writePods(t, filepath.Join(fk, "pods-1.json"), kpod{name: "p0", index: 0, phase: "Failed", termReason: "Error", exit: 1})
	if err := os.WriteFile(filepath.Join(fk, "job.json"), []byte(`{"status":{"failed":1,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fk, "logs", "p0.log"), []byte("sharebench: profile cell: runner: journal: permission denied\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Dispatch(context.Background(), c, DispatchOptions{OutDir: out, Dispatcher: &Kube{Config: c.Kubernetes}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cells.Failed != 1 || sum.Cells.Pending != 3 {
		t.Errorf("summary %+v, want 1 failed and 3 pending", sum.Cells)
	}
	rep, err := CampaignStatus(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Cells[0]; r.Status != "failed" || !strings.Contains(r.Reason, "Error exit code 1") {
		t.Errorf("cell 0: %+v", r)
	}
	if r := rep.Cells[1]; r.Status != CellPending {
		t.Errorf("cell 1: %+v, want pending", r)
	}
}

// TestKubeCancel: cancelling the dispatch deletes the Job (and so its pods) and the
// ConfigMap, and records nothing.
func TestKubeCancel(t *testing.T) {
	fk := fakeKubectl(t)
	c := mustParse(t, kubeFakeCampaign)
	writePods(t, filepath.Join(fk, "pods-1.json"), kpod{name: "p0", index: 0, phase: "Running"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := &Kube{Config: c.Kubernetes}
	k.Config.Namespace, k.Config.Context = "lab", "gpu-cluster"
	out := t.TempDir()
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Dispatch(ctx, c, DispatchOptions{OutDir: out, Dispatcher: k, Logger: discardLogger()})
		done <- result{sum, err}
	}()
	// Cancel once the job is on the cluster and followed, however slow the machine.
	waitUntil(t, 2*time.Minute, "the dispatcher to follow its pods", func() bool {
		calls, _ := os.ReadFile(filepath.Join(fk, "calls"))
		return strings.Contains(string(calls), "get pods")
	})
	cancel()
	res := <-done
	sum, err := res.sum, res.err
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if sum.Ran != 0 {
		t.Errorf("%d results recorded", sum.Ran)
	}
	calls, _ := os.ReadFile(filepath.Join(fk, "calls"))
	name := kubeJobName(c, c.Cells())
	if !strings.Contains(string(calls), "kubectl --context=gpu-cluster --namespace=lab delete job,configmap "+name+" --ignore-not-found --wait=false\n") {
		t.Errorf("job not deleted on cancel:\n%s", calls)
	}
	if st, _ := ReadDispatchState(out); st == nil || st.Active {
		t.Errorf("dispatch record after cancel: %+v", st)
	}
}
