package trace

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestShippedTraces reads every trace of the shared data directory.
func TestShippedTraces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		format  Format
		jobs    int
		maxGPUs int
	}{
		{"muri-philly/trace1.csv", FormatMuri, 1494, 32},
		{"muri-philly/trace1_pr.csv", FormatMuri, 1494, 32},
		{"muri-philly/trace2.csv", FormatMuri, 5755, 32},
		{"muri-philly/trace2_pr.csv", FormatMuri, 5755, 32},
		{"muri-philly/trace3.csv", FormatMuri, 992, 32},
		{"muri-philly/trace3_pr.csv", FormatMuri, 992, 32},
		{"muri-philly/trace4.csv", FormatMuri, 2638, 8},
		{"muri-philly/trace4_pr.csv", FormatMuri, 2638, 8},
		{"muri-philly/job_type_1.csv", FormatMuri, 992, 32},
		{"muri-philly/job_type_2.csv", FormatMuri, 992, 32},
		{"muri-philly/job_type_3.csv", FormatMuri, 992, 32},
		{"muri-philly/job_type_4.csv", FormatMuri, 992, 32},
		{"muri-testbed/cluster_trace.csv", FormatMuri, 400, 32},
		{"sjf-bsbf-physical/trace_data_new_32.csv", FormatMuri, 61, 32},
		{"sjf-bsbf-physical/trace_data_new.csv", FormatMuri, 30, 16},
		{"sjf-bsbf-physical/trace_data_new1.csv", FormatMuri, 30, 16},
		{"sjf-bsbf-physical/trace_data_new2.csv", FormatMuri, 30, 16},
		{"sjf-bsbf-physical/trace_data_new_origin.csv", FormatMuri, 30, 16},
		{"sjf-bsbf-physical/cluster_trace_12.csv", FormatMuri, 14, 0},
		{"sjf-bsbf-physical/cluster_trace_20.csv", FormatMuri, 22, 0},
		{"tiresias-60job/60_job.csv", FormatTiresias, 60, 8},
		{"pollux-philly-jobs/philly.csv", FormatPhilly, 82247, 128},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := dataFile(t, tt.file)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := NewReader(bytes.NewReader(raw), tt.file, FormatAuto, Options{})
			n, maxGPUs := 0, 0
			for r.Scan() {
				n++
				maxGPUs = max(maxGPUs, r.Job().GPUs)
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if r.Format() != tt.format || n != tt.jobs {
				t.Errorf("read %d jobs as %v, want %d as %v", n, r.Format(), tt.jobs, tt.format)
			}
			if tt.maxGPUs != 0 && maxGPUs != tt.maxGPUs {
				t.Errorf("largest gang %d, want %d", maxGPUs, tt.maxGPUs)
			}
			// The same jobs come out of the explicit format, and survive a canonical round trip.
			jobs, err := ReadAll(bytes.NewReader(raw), tt.file, tt.format, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Write(&b, jobs); err != nil {
				t.Fatal(err)
			}
			back, err := ReadAll(&b, "canonical.csv", FormatCanonical, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d := diffJobs(jobs, back, true); d != "" {
				t.Errorf("canonical round trip (-want +got):\n%s", d)
			}
		})
	}
}

// TestPhysicalTraceSummary checks the figures that the paper specification (§7.3) gives for
// the authors' 61-job physical trace.
func TestPhysicalTraceSummary(t *testing.T) {
	t.Parallel()
	jobs, err := ReadFile(dataFile(t, "sjf-bsbf-physical/trace_data_new_32.csv"), FormatAuto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hist := map[int]int{}
	var dur, gpuTime time.Duration
	for _, j := range jobs {
		hist[j.GPUs]++
		d := time.Duration(j.Iters) * j.IterTime
		dur += d
		gpuTime += time.Duration(j.GPUs) * d
	}
	if d := cmp.Diff(map[int]int{1: 26, 2: 10, 4: 13, 8: 8, 16: 2, 32: 2}, hist); d != "" {
		t.Errorf("GPU demand histogram (-want +got):\n%s", d)
	}
	if got := dur.Round(time.Second); got != 61924*time.Second {
		t.Errorf("Σ duration = %v, want 61924s", got)
	}
	if got := gpuTime.Round(time.Second); got != 183289*time.Second {
		t.Errorf("GPU time = %v, want 183289s", got)
	}
	first, last := jobs[0].Submit, jobs[len(jobs)-1].Submit
	if first != 2020*time.Millisecond || last != 600*time.Second {
		t.Errorf("arrivals span %v … %v, want 2.02s … 10m0s", first, last)
	}
}

func TestTiresiasTraceSummary(t *testing.T) {
	t.Parallel()
	jobs, err := ReadFile(dataFile(t, "tiresias-60job/60_job.csv"), FormatAuto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if first, last := jobs[0].Submit, jobs[len(jobs)-1].Submit; first != 0 || last != 1779*time.Second {
		t.Errorf("arrivals span %v … %v, want 0s … 1779s", first, last)
	}
	for _, j := range jobs {
		if j.Batch != 0 || j.IterTime <= 0 {
			t.Errorf("job %d: batch %d, iteration time %v; want 0 and positive", j.ID, j.Batch, j.IterTime)
		}
	}
}

// TestPhillyTableMapping checks the mapped Philly table: ids, the earliest submit and an even
// spread over the default models.
func TestPhillyTableMapping(t *testing.T) {
	t.Parallel()
	jobs, err := ReadFile(dataFile(t, "pollux-philly-jobs/philly.csv"), FormatPhilly, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Submit != 0 {
		t.Errorf("first submit %v, want 0", jobs[0].Submit)
	}
	span := jobs[len(jobs)-1].Submit
	wantSpan := time.Date(2017, 12, 22, 8, 2, 11, 0, time.UTC).Sub(time.Date(2017, 9, 4, 10, 30, 41, 0, time.UTC))
	if span != wantSpan {
		t.Errorf("arrival span %v, want %v", span, wantSpan)
	}
	ids := make([]JobID, len(jobs))
	count := map[string]int{}
	for i, j := range jobs {
		ids[i] = j.ID
		count[j.Model]++
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != JobID(i) {
			t.Fatalf("ids are not the row indices 0..%d: found %d at %d", len(jobs)-1, id, i)
		}
	}
	if len(count) != len(defaultModels) {
		t.Errorf("models used: %v", slices.Sorted(maps.Keys(count)))
	}
	for m, n := range count {
		if share := float64(n) / float64(len(jobs)); share < 0.12 || share > 0.13 {
			t.Errorf("model %s got %.4f of the jobs, want about 1/8", m, share)
		}
	}
	again, err := ReadFile(dataFile(t, "pollux-philly-jobs/philly.csv"), FormatPhilly, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i := range jobs {
		if jobs[i].Model == again[i].Model {
			same++
		}
	}
	if share := float64(same) / float64(len(jobs)); share > 0.15 {
		t.Errorf("seeds 1 and 2 agree on %.3f of the models, want about 1/8", share)
	}
}

// TestDefaultModelsMatchMuriTestbed recomputes DefaultModels' iteration times: the median
// iteration_time per model of Muri's 400-job testbed trace, and its per-GPU batches.
func TestDefaultModelsMatchMuriTestbed(t *testing.T) {
	t.Parallel()
	jobs, err := ReadFile(dataFile(t, "muri-testbed/cluster_trace.csv"), FormatMuri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	times := map[string][]time.Duration{}
	batch := map[string]int{}
	for _, j := range jobs {
		times[j.Model] = append(times[j.Model], j.IterTime)
		batch[j.Model] = j.Batch
	}
	var got []ModelSpec
	for _, m := range DefaultModels() {
		ts := times[m.Name]
		slices.Sort(ts)
		median := ts[len(ts)/2]
		if len(ts)%2 == 0 {
			median = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
		}
		got = append(got, ModelSpec{Name: m.Name, Batch: batch[m.Name], IterTime: median, Weight: 1})
	}
	if d := cmp.Diff(DefaultModels(), got); d != "" {
		t.Errorf("DefaultModels differ from the Muri testbed medians (-table +recomputed):\n%s", d)
	}
	if len(times) != len(defaultModels) {
		t.Errorf("the trace has %d models, the table %d", len(times), len(defaultModels))
	}
}
