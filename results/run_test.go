package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadRun(t *testing.T) {
	t.Parallel()
	r, err := LoadRun(filepath.Join("testdata", "runs", "a"))
	if err != nil {
		t.Fatal(err)
	}
	wantSummary := Summary{
		Policy: "sjf-bsbf", PolicySpec: `sjf-bsbf{"preempt":false}`, Trace: "tiny.csv", Cluster: "1x4",
		GPUs: 4, GPUMemGiB: 48, Seed: 7, Profile: "test-profile.json", ProfileSource: "test",
		Jobs: 3, AvgJCTS: 400, P50JCTS: 300, P95JCTS: 600, P99JCTS: 600, MakespanS: 700,
		AvgQueueS: 50, GPUUtil: 0.625, SharedJobs: 2,
		Labels: Labels{"experiment": "E0", "trace": "tiny", "gpu_mem_gib": "48", "load": "0.5", "fast": "true"},
		Notes:  []string{"test fixture: hand-written"},
		// The fixture predates bench's metrics: a summary without them does not say.
		SlowdownMean: math.NaN(), SlowdownP95: math.NaN(), SlowdownP99: math.NaN(), SlowdownFairness: math.NaN(),
		EffectiveGPUUtil: math.NaN(), SubBatchJobs: -1,
	}
	if diff := cmp.Diff(wantSummary, r.Summary, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("summary mismatch (-want +got):\n%s", diff)
	}
	wantJobs := []JobRow{
		{JobID: "0", Model: "resnet50", NumGPU: 1, EndS: 300, JCTS: 300, SoloS: 250, SharedS: 120, SubBatch: 32, Batch: 64},
		{JobID: "1", Model: "vgg16", NumGPU: 2, SubmitS: 50, StartS: 100, EndS: 350, JCTS: 300, QueueS: 50, SoloS: 200, SharedS: 120, SubBatch: 32, Batch: 32},
		{JobID: "2", Model: "bert", NumGPU: 4, SubmitS: 100, StartS: 200, EndS: 700, JCTS: 600, QueueS: 100, SoloS: 500, SubBatch: 16, Batch: 16},
	}
	if diff := cmp.Diff(wantJobs, r.Jobs); diff != "" {
		t.Errorf("jobs mismatch (-want +got):\n%s", diff)
	}
	wantUtil := []UtilRow{{0, 2, 1, 2, 0}, {350, 3, 0, 1, 0}}
	if diff := cmp.Diff(wantUtil, r.Util); diff != "" {
		t.Errorf("util mismatch (-want +got):\n%s", diff)
	}
	if got := r.Trace(); got != "tiny" {
		t.Errorf("Trace() = %q, want the label tiny", got)
	}
	if got := r.Experiment(); got != "E0" {
		t.Errorf("Experiment() = %q, want E0", got)
	}
}

func TestTraceFallsBackToFileName(t *testing.T) {
	t.Parallel()
	r, err := LoadRun(filepath.Join("testdata", "runs", "nested", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Trace(); got != "tiny.csv" {
		t.Errorf("Trace() = %q, want the summary's trace field tiny.csv", got)
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "runs")
	got, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a"), filepath.Join(root, "nested", "b")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover mismatch (-want +got):\n%s", diff)
	}
	// A run directory itself is its own only run.
	got, err = Discover(filepath.Join(root, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(root, "a")}, got); diff != "" {
		t.Errorf("Discover(run dir) mismatch (-want +got):\n%s", diff)
	}
	if _, err := Discover(filepath.Join(root, "missing")); err == nil {
		t.Error("Discover of a missing directory: no error")
	}
	runs, err := LoadRuns(want...)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[1].Summary.Policy != "tiresias" {
		t.Errorf("LoadRuns: got %d runs, second policy %q", len(runs), runs[1].Summary.Policy)
	}
}

// validFiles returns the three files of a valid run directory.
func validFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{SummaryFile, JobsFile, UtilFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "runs", "a", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	return files
}

func TestLoadRunErrors(t *testing.T) {
	t.Parallel()
	const okJobsHeader = "job_id,model,num_gpu,submit_s,start_s,end_s,jct_s,queue_s,solo_s,shared_s,preemptions,sub_batch,batch\n"
	tests := []struct {
		name    string
		file    string
		content string // replaces the file; "" deletes it
		want    string // substring of the error, with the position
	}{
		{"summary syntax error", SummaryFile, "{\n  \"policy\": \"fifo\",\n  \"trace\" \"x\"\n}\n", "summary.json:3:11: invalid character"},
		{"summary type error", SummaryFile, "{\"policy\": \"fifo\", \"trace\": \"t\", \"jobs\": \"many\", \"avg_jct_s\": 1, \"makespan_s\": 1}", "summary.json:1:47: json: cannot unmarshal string"},
		{"summary truncated", SummaryFile, "{\"policy\": \"fifo\",\n", "summary.json:2:1: unexpected EOF"},
		{"summary trailing data", SummaryFile, "{\"policy\": \"fifo\", \"trace\": \"t\", \"jobs\": 1, \"avg_jct_s\": 1, \"makespan_s\": 1}\n{}", "summary.json:2:1: trailing data"},
		{"summary missing field", SummaryFile, "{\"policy\": \"fifo\", \"trace\": \"t\", \"jobs\": 1, \"makespan_s\": 1}", `summary.json: missing field "avg_jct_s"`},
		{"summary empty policy", SummaryFile, "{\"policy\": \"\", \"trace\": \"t\", \"jobs\": 1, \"avg_jct_s\": 1, \"makespan_s\": 1}", "summary.json: policy: empty"},
		{"summary util above one", SummaryFile, "{\"policy\": \"fifo\", \"trace\": \"t\", \"jobs\": 1, \"avg_jct_s\": 1, \"makespan_s\": 1, \"gpu_util\": 1.5}", "gpu_util: want a fraction in [0, 1]"},
		{"summary bad label", SummaryFile, "{\"policy\": \"fifo\", \"trace\": \"t\", \"jobs\": 1, \"avg_jct_s\": 1, \"makespan_s\": 1, \"labels\": {\"x\": [1]}}", `labels: "x": want a string, number or boolean`},
		{"summary empty", SummaryFile, "  \n", "summary.json: empty file"},
		{"summary missing", SummaryFile, "", "summary.json: no such file"},
		{"jobs missing", JobsFile, "", "jobs.csv: no such file"},
		{"jobs empty", JobsFile, "\n", "jobs.csv: empty file"},
		{"jobs missing column", JobsFile, "job_id,model\n1,x\n", `jobs.csv:1: missing column "num_gpu"`},
		{"jobs duplicate column", JobsFile, "job_id,model,model\n", `jobs.csv:1:14: duplicate column "model"`},
		{"jobs bad number", JobsFile, okJobsHeader + "0,resnet50,1,0,0,300,300,0,250,120,0,32,64\n1,vgg16,2,50,100,350,abc,50,200,120,0,32,32\n", `jobs.csv:3:22: jct_s: want a finite number, got "abc"`},
		{"jobs negative int", JobsFile, okJobsHeader + "0,resnet50,-1,0,0,300,300,0,250,120,0,32,64\n", `jobs.csv:2:12: num_gpu: want an integer ≥ 0, got "-1"`},
		{"jobs negative time", JobsFile, okJobsHeader + "0,resnet50,1,0,0,300,300,-5,250,120,0,32,64\n", `jobs.csv:2:26: queue_s: want a number ≥ 0, got -5`},
		{"jobs NaN", JobsFile, okJobsHeader + "0,resnet50,1,0,0,300,NaN,0,250,120,0,32,64\n", `jobs.csv:2:22: jct_s: want a finite number, got "NaN"`},
		{"jobs empty id", JobsFile, okJobsHeader + ",resnet50,1,0,0,300,300,0,250,120,0,32,64\n", `jobs.csv:2:1: job_id: empty`},
		{"jobs wrong field count", JobsFile, okJobsHeader + "0,resnet50,1\n", "jobs.csv:2:1: wrong number of fields"},
		{"jobs bad quote", JobsFile, okJobsHeader + "0,\"res\"net,1,0,0,300,300,0,250,120,0,32,64\n", `jobs.csv:2:7: extraneous or missing " in quoted-field`},
		{"util bad number", UtilFile, "t_s,busy_gpus,shared_gpus,running_jobs,pending_jobs\n0,1,0,1,x\n", `util.csv:2:9: pending_jobs: want a finite number, got "x"`},
		{"util missing", UtilFile, "", "util.csv: no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range validFiles(t) {
				if name == tc.file {
					if tc.content == "" {
						continue
					}
					content = tc.content
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadRun(dir)
			if err == nil {
				t.Fatalf("LoadRun: no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LoadRun error\n got: %v\nwant substring: %s", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "results: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestExtraColumnsAreIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := validFiles(t)
	files[UtilFile] = "pending_jobs,t_s,extra,busy_gpus,shared_gpus,running_jobs\n4,10,zz,2,1,3\n"
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]UtilRow{{TS: 10, BusyGPUs: 2, SharedGPUs: 1, RunningJobs: 3, PendingJobs: 4}}, r.Util); diff != "" {
		t.Errorf("util mismatch (-want +got):\n%s", diff)
	}
}
