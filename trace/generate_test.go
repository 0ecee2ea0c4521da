package trace

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testPool returns a pool of n (GPUs, duration) samples with gang sizes 1–16 and durations
// log-uniform between one minute and ten hours.
func testPool(n int) []Sample {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := []int{1, 1, 1, 1, 2, 2, 4, 8, 16}
	pool := make([]Sample, n)
	for i := range pool {
		d := 60 * math.Exp(rng.Float64()*math.Log(600))
		pool[i] = Sample{GPUs: sizes[rng.IntN(len(sizes))], Duration: time.Duration(d * 1e9)}
	}
	return pool
}

// offeredLoad returns Σ gpus × Iters × IterTime ÷ (gpus × arrival span) of jobs sorted by submit.
func offeredLoad(jobs []Job, gpus int) float64 {
	var work float64
	for _, j := range jobs {
		work += float64(j.GPUs) * (time.Duration(j.Iters) * j.IterTime).Seconds()
	}
	span := (jobs[len(jobs)-1].Submit - jobs[0].Submit).Seconds()
	return work / (float64(gpus) * span)
}

func TestGenerateDeterministic(t *testing.T) {
	t.Parallel()
	cfg := GenConfig{Jobs: 2000, Load: 0.8, GPUs: 32, Pool: testPool(500)}
	a, err := Generate(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if d := diffJobs(a, b, false); d != "" {
		t.Fatalf("same seed, different jobs (-first +second):\n%s", d)
	}
	c, err := Generate(cfg, rand.New(rand.NewPCG(1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if diffJobs(a, c, false) == "" {
		t.Error("different seeds gave identical jobs")
	}
	for i, j := range a {
		if j.ID != JobID(i) || j.Line != 0 || (i > 0 && j.Submit < a[i-1].Submit) {
			t.Fatalf("job %d: %+v", i, j)
		}
		if j.GPUs > 32 || j.Iters < 1 {
			t.Fatalf("job %d: %+v", i, j)
		}
	}
}

// TestGeneratePinned pins the generator's output for one seed, so that a change in the
// variate transformations (or in the math/rand/v2 PCG source) shows up as a diff.
func TestGeneratePinned(t *testing.T) {
	t.Parallel()
	pool := []Sample{{1, time.Hour}, {2, 30 * time.Minute}, {8, 90 * time.Second}, {64, time.Hour}}
	got, err := Generate(GenConfig{Jobs: 6, Load: 1, GPUs: 16, Pool: pool}, rand.New(rand.NewPCG(2024, 7)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{ // the 64-GPU sample is excluded: MaxGPUs defaults to GPUs
		{ID: 0, Submit: 0, GPUs: 1, Iters: 8238, Model: "gpt2", Batch: 4, IterTime: 437 * time.Millisecond},
		{ID: 1, Submit: 233208319936, GPUs: 1, Iters: 15929, Model: "vgg19", Batch: 16, IterTime: 226 * time.Millisecond},
		{ID: 2, Submit: 476985618848, GPUs: 1, Iters: 16822, Model: "vgg16", Batch: 16, IterTime: 214 * time.Millisecond},
		{ID: 3, Submit: 578894200896, GPUs: 1, Iters: 7073, Model: "dqn", Batch: 128, IterTime: 509 * time.Millisecond},
		{ID: 4, Submit: 747399302724, GPUs: 8, Iters: 89, Model: "resnet18", Batch: 128, IterTime: 1010 * time.Millisecond},
		{ID: 5, Submit: 766578995237, GPUs: 1, Iters: 6486, Model: "a2c", Batch: 64, IterTime: 555 * time.Millisecond},
	}
	if d := diffJobs(want, got, false); d != "" {
		t.Errorf("Generate changed its output (-pinned +got):\n%s", d)
	}
}

func TestGenerateLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		load  float64
		gpus  int
		seed  uint64
		pool  func(t *testing.T) []Sample
		toler float64
	}{
		{"synthetic/load=0.5", 0.5, 64, 1, func(*testing.T) []Sample { return testPool(5000) }, 0.03},
		{"synthetic/load=1", 1, 64, 2, func(*testing.T) []Sample { return testPool(5000) }, 0.03},
		{"synthetic/load=2", 2, 32, 3, func(*testing.T) []Sample { return testPool(5000) }, 0.03},
		{"philly/load=0.9", 0.9, 64, 4, phillyPool, 0.10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := GenConfig{Jobs: 100_000, Load: tt.load, GPUs: tt.gpus, Pool: tt.pool(t)}
			jobs, err := Generate(cfg, rand.New(rand.NewPCG(tt.seed, 0)))
			if err != nil {
				t.Fatal(err)
			}
			got := offeredLoad(jobs, tt.gpus)
			t.Logf("offered load %.4f, target %v", got, tt.load)
			if math.Abs(got/tt.load-1) > tt.toler {
				t.Errorf("offered load %.4f, want %v ± %.0f%%", got, tt.load, 100*tt.toler)
			}
		})
	}
}

// phillyPool reads the Philly table as a pool, skipping the test when it is absent.
func phillyPool(t *testing.T) []Sample {
	f, err := os.Open(dataFile(t, "pollux-philly-jobs/philly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pool, skipped, err := ReadPhillyPool(f, "philly.csv", Options{})
	if err != nil || skipped != 0 || len(pool) != 82247 {
		t.Fatalf("ReadPhillyPool: %d samples, %d skipped, %v", len(pool), skipped, err)
	}
	return pool
}

func TestGenerateMaxGPUs(t *testing.T) {
	t.Parallel()
	pool := testPool(1000)
	for _, tt := range []struct{ gpus, max, want int }{{8, 0, 8}, {64, 4, 4}, {64, 0, 16}} {
		jobs, err := Generate(GenConfig{Jobs: 5000, Load: 1, GPUs: tt.gpus, MaxGPUs: tt.max, Pool: pool}, rand.New(rand.NewPCG(5, 5)))
		if err != nil {
			t.Fatal(err)
		}
		largest := 0
		for _, j := range jobs {
			largest = max(largest, j.GPUs)
		}
		if largest != tt.want {
			t.Errorf("GPUs %d, MaxGPUs %d: largest gang %d, want %d", tt.gpus, tt.max, largest, tt.want)
		}
	}
}

func TestGenerateModels(t *testing.T) {
	t.Parallel()
	models := []ModelSpec{
		{Name: "a", Batch: 8, IterTime: time.Second, Weight: 3},
		{Name: "b", Batch: 0, IterTime: 250 * time.Millisecond, Weight: 1},
		{Name: "c", IterTime: time.Second, Weight: 0},
	}
	jobs, err := Generate(GenConfig{Jobs: 40_000, Load: 1, GPUs: 8, Pool: testPool(100), Models: models}, rand.New(rand.NewPCG(9, 9)))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, j := range jobs {
		count[j.Model]++
		var m ModelSpec
		for _, m = range models {
			if m.Name == j.Model {
				break
			}
		}
		if j.Batch != m.Batch || j.IterTime != m.IterTime {
			t.Fatalf("job %d: batch %d, iteration time %v; model %+v", j.ID, j.Batch, j.IterTime, m)
		}
	}
	if count["c"] != 0 {
		t.Errorf("model c with weight 0 drawn %d times", count["c"])
	}
	if share := float64(count["a"]) / float64(len(jobs)); math.Abs(share-0.75) > 0.01 {
		t.Errorf("model a drawn for %.3f of the jobs, want 0.75", share)
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	pool := []Sample{{1, time.Minute}, {8, time.Hour}}
	ok := GenConfig{Jobs: 10, Load: 1, GPUs: 8, Pool: pool}
	with := func(f func(*GenConfig)) GenConfig { c := ok; f(&c); return c }
	tests := []struct {
		name string
		cfg  GenConfig
		want string
	}{
		{"no jobs", with(func(c *GenConfig) { c.Jobs = 0 }), "trace: generate: job count 0 is not positive"},
		{"zero load", with(func(c *GenConfig) { c.Load = 0 }), "trace: generate: load 0 is not a positive finite number"},
		{"NaN load", with(func(c *GenConfig) { c.Load = math.NaN() }), "trace: generate: load NaN is not a positive finite number"},
		{"no gpus", with(func(c *GenConfig) { c.GPUs = 0 }), "trace: generate: cluster GPU count 0 is not positive"},
		{"negative max", with(func(c *GenConfig) { c.MaxGPUs = -1 }), "trace: generate: maximum gang size -1 is negative"},
		{"empty pool", with(func(c *GenConfig) { c.Pool = nil }), "trace: generate: no pool sample needs at most 8 GPUs (pool of 0)"},
		{"all too large", with(func(c *GenConfig) { c.MaxGPUs = 0; c.GPUs = 4; c.Pool = pool[1:] }),
			"trace: generate: no pool sample needs at most 4 GPUs (pool of 1)"},
		{"bad sample", with(func(c *GenConfig) { c.Pool = []Sample{{1, 0}} }),
			"trace: generate: pool sample 0: GPUs 1 and duration 0s must be positive"},
		{"bad model", with(func(c *GenConfig) { c.Models = []ModelSpec{{Name: "m", Weight: 1}} }),
			`trace: generate: model "m": iteration time 0s is not positive`},
		{"3e8 jobs", with(func(c *GenConfig) { c.Jobs = 3e8 }), "trace: generate: job count 300000000 exceeds the maximum of 10000000"},
		{"sample past the horizon", with(func(c *GenConfig) { c.Pool = []Sample{{1, Horizon + 1}}; c.Load = 1e6 }),
			"trace: generate: job 0: ends after 100 years, beyond the 100-year horizon"},
		{"tiny load", with(func(c *GenConfig) { c.Load = 1e-300 }), "trace: generate: load 1e-300 gives arrival times beyond the 100-year horizon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Generate(tt.cfg, rand.New(rand.NewPCG(1, 1)))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Generate error = %v, want %s", err, tt.want)
			}
		})
	}
	if _, err := Generate(ok, nil); err == nil || !strings.Contains(err.Error(), "nil random source") {
		t.Errorf("nil rng: error %v", err)
	}
}

func TestGenerateAllocatesOnce(t *testing.T) {
	pool := testPool(1000)
	rng := rand.New(rand.NewPCG(3, 4))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Generate(GenConfig{Jobs: 1000, Load: 1, GPUs: 64, Pool: pool}, rng); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("Generate made %v allocations, want 1", allocs)
	}
}

func TestJobPool(t *testing.T) {
	t.Parallel()
	jobs := []Job{{ID: 1, GPUs: 2, Iters: 10, IterTime: time.Second}, {ID: 2, GPUs: 1, Iters: 3, IterTime: time.Millisecond}}
	got, err := JobPool(jobs)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Sample{{2, 10 * time.Second}, {1, 3 * time.Millisecond}}, got); d != "" {
		t.Errorf("JobPool (-want +got):\n%s", d)
	}
	if _, err := JobPool([]Job{{ID: 3, GPUs: 1, Iters: 1, Line: 4}}); err == nil ||
		err.Error() != "trace: job 3 (line 4) has no positive GPUs, iterations and iteration time" {
		t.Errorf("JobPool without iteration time: %v", err)
	}
	if _, err := JobPool([]Job{{ID: 5, GPUs: 1, Iters: math.MaxInt64, IterTime: 2}}); err == nil {
		t.Error("JobPool accepted an overflowing duration")
	}
}

func TestReadPhillyPool(t *testing.T) {
	t.Parallel()
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.5,1,66.5,a\n2017-10-09 07:00:00,0,1,0,a\n2017-10-09 07:02:00,10,4,40,a\n"
	pool, skipped, err := ReadPhillyPool(strings.NewReader(in), "p.csv", Options{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Sample{{1, 66500 * time.Millisecond}, {4, 10 * time.Second}}, pool); d != "" || skipped != 1 {
		t.Errorf("skipped %d, pool (-want +got):\n%s", skipped, d)
	}
	_, _, err = ReadPhillyPool(strings.NewReader(in), "p.csv", Options{})
	if err == nil || err.Error() != `p.csv:3: duration: must be positive, got "0"` {
		t.Errorf("error = %v", err)
	}
	_, _, err = ReadPhillyPool(strings.NewReader("job_id\n"), "p.csv", Options{})
	if err == nil || !strings.HasPrefix(err.Error(), `p.csv:1: header "job_id" does not match the philly format`) {
		t.Errorf("error = %v", err)
	}
}
