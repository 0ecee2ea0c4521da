package trace

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		jobs []Job
		want string
	}{
		{
			name: "no iteration times",
			jobs: []Job{
				{ID: 3, Submit: 2500 * time.Millisecond, GPUs: 4, Iters: 100, Model: "vgg16", Batch: 16},
				{ID: 1, Submit: 0, GPUs: 1, Iters: 1, Model: "bert"},
			},
			want: "job_id,submit_s,num_gpu,model,batch_size,iterations\n3,2.5,4,vgg16,16,100\n1,0,1,bert,0,1\n",
		},
		{
			name: "iteration times and nanoseconds",
			jobs: []Job{
				{ID: 0, Submit: 1, GPUs: 1, Iters: 7, Model: "a2c", Batch: 64, IterTime: 555 * time.Millisecond},
				{ID: 9, Submit: Horizon - 1, GPUs: 8, Iters: math.MaxInt64, Model: "gpt 2", Batch: 4},
			},
			want: "job_id,submit_s,num_gpu,model,batch_size,iterations,iteration_time_s\n" +
				"0,0.000000001,1,a2c,64,7,0.555\n9,3153599999.999999999,8,gpt 2,4,9223372036854775807,0\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := Write(&b, tt.jobs); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, b.String()); d != "" {
				t.Errorf("Write (-want +got):\n%s", d)
			}
		})
	}
}

func TestWriteRejects(t *testing.T) {
	t.Parallel()
	ok := Job{ID: 1, GPUs: 1, Iters: 1, Model: "m"}
	with := func(f func(*Job)) []Job { j := ok; f(&j); return []Job{j} }
	tests := []struct {
		name string
		jobs []Job
		want string
	}{
		{"negative id", with(func(j *Job) { j.ID = -1 }), "trace: write: job -1 (index 0): negative job id"},
		{"negative submit", with(func(j *Job) { j.Submit = -1 }), "trace: write: job 1 (index 0): negative submit time -1ns"},
		{"zero gpus", with(func(j *Job) { j.GPUs = 0 }), "trace: write: job 1 (index 0): GPU count 0 out of range"},
		{"zero iterations", with(func(j *Job) { j.Iters = 0 }), "trace: write: job 1 (index 0): iterations 0 not positive"},
		{"negative batch", with(func(j *Job) { j.Batch = -1 }), "trace: write: job 1 (index 0): batch -1 out of range"},
		{"negative iteration time", with(func(j *Job) { j.IterTime = -1 }), "trace: write: job 1 (index 0): negative iteration time -1ns"},
		{"empty model", with(func(j *Job) { j.Model = "" }), "trace: write: job 1 (index 0): model: missing value"},
		{"model with comma", with(func(j *Job) { j.Model = "a,b" }), `trace: write: job 1 (index 0): model: invalid model name "a,b"`},
		{"model with blank", with(func(j *Job) { j.Model = " a" }), `trace: write: job 1 (index 0): model: invalid model name " a": surrounding blanks`},
		{"duplicate id", []Job{ok, ok}, "trace: write: job 1 (index 1): duplicate job id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Write(&bytes.Buffer{}, tt.jobs)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Write error = %v, want %s", err, tt.want)
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteReportsIOErrors(t *testing.T) {
	t.Parallel()
	err := Write(failWriter{}, []Job{{ID: 1, GPUs: 1, Iters: 1, Model: "m"}})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write error = %v, want one wrapping disk full", err)
	}
}

// randomJobs returns n valid jobs with distinct ids drawn from rng, covering extreme values.
func randomJobs(rng *rand.Rand, n int) []Job {
	names := []string{"resnet18", "vgg16", "bert", "gpt2", "x y", "ü-model", "m"}
	pick := func(small, big int64) int64 {
		if rng.IntN(4) == 0 {
			return big
		}
		return small
	}
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{
			ID:       JobID(pick(int64(i), math.MaxInt64-int64(i))),
			Submit:   time.Duration(pick(rng.Int64N(1e15), int64(Horizon)-rng.Int64N(1e9))),
			GPUs:     int(pick(1+rng.Int64N(64), math.MaxInt32)),
			Iters:    pick(1+rng.Int64N(1e7), math.MaxInt64),
			Model:    names[rng.IntN(len(names))],
			Batch:    int(pick(rng.Int64N(512), math.MaxInt32)),
			IterTime: time.Duration(pick(rng.Int64N(2e9), rng.Int64N(2))),
		}
		// Keep the job's exclusive run within the horizon, at its edge when the draw is big.
		if j := &jobs[i]; j.IterTime > 0 {
			if j.Submit > Horizon-j.IterTime {
				j.Submit = Horizon - j.IterTime
			}
			j.Iters = min(j.Iters, int64(Horizon-j.Submit)/int64(j.IterTime))
		}
	}
	return jobs
}

func TestWriteReadRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		jobs := randomJobs(rng, 1+rng.IntN(20))
		if round%3 == 0 {
			for i := range jobs {
				jobs[i].IterTime = 0 // exercise the header without iteration_time_s
			}
		}
		var b bytes.Buffer
		if err := Write(&b, jobs); err != nil {
			t.Fatal(err)
		}
		got, err := ReadAll(bytes.NewReader(b.Bytes()), "rt.csv", FormatAuto, Options{})
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, b.String())
		}
		want := slices.Clone(jobs)
		Sort(want)
		if d := diffJobs(want, got, true); d != "" {
			t.Fatalf("round %d: round trip (-want +got):\n%s", round, d)
		}
		var again bytes.Buffer
		if err := Write(&again, got); err != nil {
			t.Fatal(err)
		}
		var sorted bytes.Buffer
		if err := Write(&sorted, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sorted.Bytes(), again.Bytes()) {
			t.Fatalf("round %d: Write∘Read∘Write is not byte-exact:\n%s\n---\n%s", round, sorted.Bytes(), again.Bytes())
		}
	}
}
