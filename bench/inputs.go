package bench

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// Input names used by the experiments: "data:" names are inside the public data directory,
// the others are relative to the module root (see Env.Path).
const (
	// ProfileGavelV100 is the default profile: Gavel's V100 throughputs (MIT).
	ProfileGavelV100 = "results/profiles/gavel-v100.json"
	// ModelMapGavel maps the authors' eight models onto Gavel's.
	ModelMapGavel = "bench/modelmaps/gavel.csv"
	// TraceTestbed61 is the 61-job testbed trace rebuilt from Muri's Apache-2.0 trace.
	TraceTestbed61 = "bench/traces/testbed61.csv"
	// TraceMuri400 is Muri's 400-job testbed trace.
	TraceMuri400 = "data:traces/muri-testbed/cluster_trace.csv"
	// TracePhilly is the Pollux artifact's cleaned Philly job table (82,247 jobs).
	TracePhilly = "data:traces/pollux-philly-jobs/philly.csv"
)

// MuriPhilly returns the input name of Muri's Philly-derived trace n (1–4).
func MuriPhilly(n int) string { return fmt.Sprintf("data:traces/muri-philly/trace%d.csv", n) }

// Profile derivations (ProfileSpec.Derive).
const (
	// DeriveNone uses the profile as it is.
	DeriveNone = ""
	// DeriveSubBatch adds gradient-accumulation configurations (see DeriveSubBatches).
	DeriveSubBatch = "subbatch"
	// DeriveSymmetric makes every slowdown symmetric (see SymmetricXi).
	DeriveSymmetric = "symmetric"
)

// ProfileSpec says which interference profile a run uses and how it is transformed.
type ProfileSpec struct {
	// File is the profile's input name.
	File string `json:"file"`
	// ModelMap is the input name of the model map from trace models onto profile models.
	ModelMap string `json:"model_map"`
	// Derive names the derivations applied to the profile, in order and joined by "+"
	// (DeriveSubBatch, DeriveSymmetric, or "subbatch+symmetric").
	Derive string `json:"derive,omitempty"`
	// XiScale, when set and not 1, scales every slowdown: ξ' = 1 + (max(ξ,1) − 1)·XiScale
	// (see ScaleXi); 0 removes all interference.
	XiScale *float64 `json:"xi_scale,omitempty"`
}

// Name returns the file name recorded as the run's profile: the base name of File, with the
// derivation appended (e.g. "gavel-v100-subbatch.json", which the aggregation writes to
// profiles/). A ξ scale does not change the name: it is recorded in the profile source
// ("gavel, ξ scaled ×1.5"), the run's xi_scale label and run.json, so that runs differing only
// in the scale stay comparable along the xi_scale axis.
func (p ProfileSpec) Name() string {
	base := strings.TrimSuffix(path.Base(p.File), ".json")
	if p.Derive != DeriveNone {
		base += "-" + strings.ReplaceAll(p.Derive, "+", "-")
	}
	return base + ".json"
}

// GenSpec describes a synthetic trace (trace.Generate).
type GenSpec struct {
	// Jobs is the number of jobs.
	Jobs int `json:"jobs" yaml:"jobs"`
	// Load is the target offered load on the run's cluster, computed with the run's profile
	// (TraceStats.OfferedLoad). The generator is calibrated per seed so that the trace meets it.
	Load float64 `json:"load" yaml:"load"`
	// Pool is the input name of the job-size distribution: the Philly table (TracePhilly) or a
	// trace whose jobs carry iteration times.
	Pool string `json:"pool" yaml:"pool"`
}

// TraceSpec says how a run obtains its jobs.
type TraceSpec struct {
	// Name labels the trace in outputs (the "trace" label), e.g. "trace1" or "testbed61".
	Name string `json:"name"`
	// File is the input name of a trace file; empty for a generated trace.
	File string `json:"file,omitempty"`
	// Format is the file's dialect (trace.FormatAuto detects it).
	Format string `json:"format,omitempty"`
	// Gen describes a generated trace; nil for a file.
	Gen *GenSpec `json:"gen,omitempty"`
	// LoadScale, when neither 0 nor 1, multiplies the offered load by dividing every submit
	// time by it.
	LoadScale float64 `json:"load_scale,omitempty"`
	// PermuteModels makes each seed a draw of a trace file: its models are permuted among its
	// jobs (see PermuteModels).
	PermuteModels bool `json:"permute_models,omitempty"`
}

// Inputs loads and caches the inputs of runs: traces, job-size pools, profiles and model maps.
// It is safe for concurrent use; cached values are shared and must not be modified.
type Inputs struct {
	env   Env
	mu    sync.Mutex
	cache map[string]*inputEntry
	memo  memo // simulations shared among a sweep's runs (memo.go)
}

type inputEntry struct {
	once sync.Once
	val  any
	err  error
}

// NewInputs returns an empty cache reading inputs through env.
func NewInputs(env Env) *Inputs {
	return &Inputs{env: env, cache: map[string]*inputEntry{}}
}

// Env returns the environment the inputs are read from.
func (in *Inputs) Env() Env { return in.env }

// get returns the cached value under key, computing it once with load.
func (in *Inputs) get(key string, load func() (any, error)) (any, error) {
	in.mu.Lock()
	e, ok := in.cache[key]
	if !ok {
		e = &inputEntry{}
		in.cache[key] = e
	}
	in.mu.Unlock()
	e.once.Do(func() { e.val, e.err = load() })
	return e.val, e.err
}

// ModelMap returns the model map named name ("" gives nil, the identity).
func (in *Inputs) ModelMap(name string) (*profile.ModelMap, error) {
	if name == "" {
		return nil, nil
	}
	v, err := in.get("modelmap:"+name, func() (any, error) {
		p, err := in.env.Path(name)
		if err != nil {
			return nil, err
		}
		return profile.LoadModelMapFile(p)
	})
	if err != nil {
		return nil, err
	}
	return v.(*profile.ModelMap), nil
}

// Profile returns the profile of spec, derived and scaled as it says.
func (in *Inputs) Profile(spec ProfileSpec) (*profile.Table, error) {
	scale := "none"
	if spec.XiScale != nil {
		scale = strconv.FormatFloat(*spec.XiScale, 'g', -1, 64)
	}
	key := fmt.Sprintf("profile:%s|%s|%s", spec.File, spec.Derive, scale)
	v, err := in.get(key, func() (any, error) {
		if spec.XiScale != nil && *spec.XiScale != 1 {
			base := spec
			base.XiScale = nil
			t, err := in.Profile(base)
			if err != nil {
				return nil, err
			}
			return ScaleXi(t, *spec.XiScale)
		}
		if spec.Derive != DeriveNone {
			// "a+b" applies b to the profile derived by a.
			base := spec
			last := spec.Derive
			if i := strings.LastIndexByte(spec.Derive, '+'); i >= 0 {
				base.Derive, last = spec.Derive[:i], spec.Derive[i+1:]
			} else {
				base.Derive = DeriveNone
			}
			t, err := in.Profile(base)
			if err != nil {
				return nil, err
			}
			switch last {
			case DeriveSubBatch:
				return DeriveSubBatches(t, spec.File)
			case DeriveSymmetric:
				return SymmetricXi(t)
			default:
				return nil, fmt.Errorf("bench: profile %s: unknown derivation %q", spec.File, last)
			}
		}
		p, err := in.env.Path(spec.File)
		if err != nil {
			return nil, err
		}
		return profile.LoadFile(p)
	})
	if err != nil {
		return nil, err
	}
	return v.(*profile.Table), nil
}

// fileJobs reads a trace file once.
func (in *Inputs) fileJobs(name, format string, seed uint64, models []trace.ModelSpec) ([]trace.Job, error) {
	f, err := trace.ParseFormat(orAuto(format))
	if err != nil {
		return nil, fmt.Errorf("bench: trace %s: %w", name, err)
	}
	key := "trace:" + name + "|" + format
	if f == trace.FormatPhilly {
		key += fmt.Sprintf("|seed=%d|models=%s", seed, modelsKey(models))
	}
	v, err := in.get(key, func() (any, error) {
		p, err := in.env.Path(name)
		if err != nil {
			return nil, err
		}
		jobs, err := trace.ReadFile(p, f, trace.Options{Seed: seed, PhillyModels: models})
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		return jobs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]trace.Job), nil
}

// pool returns the job-size samples of a pool input: the Philly table's rows, or the jobs of
// a trace file.
func (in *Inputs) pool(name string) ([]trace.Sample, error) {
	v, err := in.get("pool:"+name, func() (any, error) {
		p, err := in.env.Path(name)
		if err != nil {
			return nil, err
		}
		if name == TracePhilly {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
			pool, _, err := trace.ReadPhillyPool(bytes.NewReader(data), p, trace.Options{})
			if err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
			return pool, nil
		}
		jobs, err := trace.ReadFile(p, trace.FormatAuto, trace.Options{})
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		return trace.JobPool(jobs)
	})
	if err != nil {
		return nil, err
	}
	return v.([]trace.Sample), nil
}

func orAuto(format string) string {
	if format == "" {
		return "auto"
	}
	return format
}

func modelsKey(models []trace.ModelSpec) string {
	var b strings.Builder
	for _, m := range models {
		fmt.Fprintf(&b, "%s/%d/%d/%g;", m.Name, m.Batch, m.IterTime, m.Weight)
	}
	return b.String()
}

// ProfileModels returns the authors' eight models (trace.DefaultModels, equal weights) with, as
// iteration time, the profile's 1-GPU step time of the configuration each maps to. Jobs built
// from a table of durations (the Philly table, the generator) then keep their durations on one
// GPU under the profile; on more GPUs they scale as the profile's step times do.
func ProfileModels(prof *profile.Table, mm *profile.ModelMap) ([]trace.ModelSpec, error) {
	models := trace.DefaultModels()
	for i := range models {
		m := &models[i]
		step, err := soloStep(trace.Job{ID: trace.JobID(i), Model: m.Name, Batch: m.Batch, GPUs: 1, IterTime: 0}, prof, mm, math.MaxInt64)
		if err != nil {
			return nil, fmt.Errorf("bench: model %s: %w", m.Name, err)
		}
		m.IterTime = step
	}
	return models, nil
}

// Jobs returns the jobs of a run's trace: a file (the Philly table mapped with seed and the
// profile's models), or a generated trace calibrated to its target load. The slice is the
// caller's own.
func (in *Inputs) Jobs(ts TraceSpec, seed uint64, prof *profile.Table, mm *profile.ModelMap, gpus int, memBytes int64) ([]trace.Job, error) {
	var jobs []trace.Job
	switch {
	case ts.Gen != nil && ts.File != "":
		return nil, fmt.Errorf("bench: trace %s: both a file and a generator", ts.Name)
	case ts.Gen != nil && ts.PermuteModels:
		return nil, fmt.Errorf("bench: trace %s: permute_models applies to trace files (a generated trace draws its models)", ts.Name)
	case ts.Gen != nil:
		var err error
		if jobs, err = in.generate(*ts.Gen, seed, prof, mm, gpus, memBytes); err != nil {
			return nil, fmt.Errorf("bench: trace %s: %w", ts.Name, err)
		}
	case ts.File != "":
		var models []trace.ModelSpec
		if ts.Format == "philly" {
			var err error
			if models, err = ProfileModels(prof, mm); err != nil {
				return nil, err
			}
		}
		cached, err := in.fileJobs(ts.File, ts.Format, seed, models)
		if err != nil {
			return nil, err
		}
		jobs = slices.Clone(cached)
		if ts.PermuteModels {
			if err := PermuteModels(jobs, seed, prof, mm); err != nil {
				return nil, fmt.Errorf("bench: trace %s: %w", ts.Name, err)
			}
		}
	default:
		return nil, fmt.Errorf("bench: trace %s: neither a file nor a generator", ts.Name)
	}
	if ts.LoadScale != 0 && ts.LoadScale != 1 {
		if !(ts.LoadScale > 0) || math.IsInf(ts.LoadScale, 0) {
			return nil, fmt.Errorf("bench: trace %s: load scale %v is not positive", ts.Name, ts.LoadScale)
		}
		for i := range jobs {
			jobs[i].Submit = time.Duration(math.Round(float64(jobs[i].Submit) / ts.LoadScale))
		}
	}
	return jobs, nil
}

// PermuteModels turns a trace file into draw number seed of the process that built it: the
// jobs' (model, batch) pairs are shuffled among the jobs by a permutation drawn from seed, and
// each job's iterations are rescaled so that its solo time on its GPUs under the profile stays
// what it was. Muri built its traces this way, giving each Philly job a model at random and
// iterations = duration ÷ the model's step time (data/traces/muri-philly/README.md), so a draw
// keeps every job's arrival, GPU count and duration, the trace's offered load (up to the
// rounding of iterations) and its exact model mix, and changes only which job trains which
// model. Step times ignore GPU memory, so a draw is the same trace at every memory size (E5).
func PermuteModels(jobs []trace.Job, seed uint64, prof *profile.Table, mm *profile.ModelMap) error {
	rng := rand.New(rand.NewPCG(seed, streamSeed("bench permute models")))
	perm := rng.Perm(len(jobs))
	type config struct {
		model      string
		batch, gpu int
	}
	steps := map[config]time.Duration{}
	step := func(j trace.Job) (time.Duration, error) {
		k := config{j.Model, j.Batch, j.GPUs}
		if s, ok := steps[k]; ok {
			return s, nil
		}
		s, err := soloStep(j, prof, mm, math.MaxInt64)
		if err == nil && s <= 0 {
			err = fmt.Errorf("job %d: model %s has no positive step time", j.ID, j.Model)
		}
		steps[k] = s
		return s, err
	}
	orig := slices.Clone(jobs)
	for i := range jobs {
		j, d := &jobs[i], orig[perm[i]]
		old, err := step(*j)
		if err != nil {
			return err
		}
		solo := float64(j.Iters) * float64(old)
		j.Model, j.Batch, j.IterTime = d.Model, d.Batch, d.IterTime
		now, err := step(*j)
		if err != nil {
			return err
		}
		j.Iters = max(1, int64(math.Round(solo/float64(now))))
	}
	return nil
}

// generate draws a synthetic trace. The generator's arrival rate is proportional to its Load
// argument and every other draw is independent of it, so the trace generated at load 1 fixes
// the jobs; the offered load A of that trace under the profile then calibrates the rate:
// generating at Load = target / A yields the same jobs with arrivals compressed by exactly
// that factor (up to nanosecond rounding), i.e. the target offered load under the profile.
func (in *Inputs) generate(g GenSpec, seed uint64, prof *profile.Table, mm *profile.ModelMap, gpus int, memBytes int64) ([]trace.Job, error) {
	if !(g.Load > 0) || math.IsInf(g.Load, 0) {
		return nil, fmt.Errorf("target load %v is not positive", g.Load)
	}
	pool, err := in.pool(g.Pool)
	if err != nil {
		return nil, err
	}
	models, err := ProfileModels(prof, mm)
	if err != nil {
		return nil, err
	}
	cfg := trace.GenConfig{Jobs: g.Jobs, Load: 1, GPUs: gpus, Pool: pool, Models: models}
	draw := func(load float64) ([]trace.Job, error) {
		cfg.Load = load
		return trace.Generate(cfg, rand.New(rand.NewPCG(seed, streamSeed("bench generate"))))
	}
	unit, err := draw(1)
	if err != nil {
		return nil, err
	}
	st, err := Stats(unit, prof, mm, memBytes)
	if err != nil {
		return nil, err
	}
	a := st.OfferedLoad(gpus)
	if !(a > 0) {
		return nil, fmt.Errorf("the generated trace has no arrival span (%d jobs)", g.Jobs)
	}
	return draw(g.Load / a)
}

// streamSeed derives the second PCG seed word of a random stream from its purpose (FNV-1a),
// so that streams for different purposes never coincide.
func streamSeed(purpose string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	return h.Sum64()
}
