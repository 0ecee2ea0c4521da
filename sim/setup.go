package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/internal/clip"
	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// setup turns trace jobs into simulation jobs: it resolves each job's model through the model
// map and the profile, lists its feasible sub-batches with their step times and memory, and
// builds the slowdown matrices of the Env.
type setup struct {
	cfg    Config
	prof   *profile.Table
	cfgIdx map[string]int
	names  []string
	keys   []profile.Config // profile configuration of each index; Model "" for trace-only ones
	gcs    []int            // GPU count of each class
	notes  []string
	noProf map[string]int // model/batch → jobs using the trace's iteration time
	estMem bool
	paced  bool // the policy is a policy.Pacer: jobs without a profile may share
	cache  map[optKey]optEntry
	fams   map[famKey]int
	memSrc map[string]int // memory fallback note → jobs
	tags   []policy.Tag   // by Option.Tag; tag 0 stands for none
	tagIdx map[policy.Tag]int32
	// slab holds the jobs, allocated together; its capacity is the number of jobs, so that
	// pointers into it stay valid.
	slab []policy.Job
	// restarts lists the cache entries' restart costs, for the run's note on their sources.
	restarts []*restartEntry
}

// restartEntry holds the restart cost after a preemption (and the lineage's per-event loss)
// of the jobs of a cache entry, which depend only on their trace model, batch and GPU count,
// and counts those jobs.
type restartEntry struct {
	cost, loss time.Duration
	src        string
	jobs       int
}

// alloc returns a new zero job from the slab (or the heap once the slab is full).
func (s *setup) alloc() *policy.Job {
	if len(s.slab) == cap(s.slab) {
		return &policy.Job{}
	}
	s.slab = s.slab[:len(s.slab)+1]
	return &s.slab[len(s.slab)-1]
}

func (s *setup) intern(name string, c profile.Config) int {
	if i, ok := s.cfgIdx[name]; ok {
		return i
	}
	i := len(s.names)
	s.cfgIdx[name] = i
	s.names = append(s.names, name)
	s.keys = append(s.keys, c)
	return i
}

func (s *setup) class(gpus int) int {
	if i := slices.Index(s.gcs, gpus); i >= 0 {
		return i
	}
	s.gcs = append(s.gcs, gpus)
	return len(s.gcs) - 1
}

// famKey groups jobs into families: the first option's configuration and memory, and the GPU
// count (every option follows from these).
type famKey struct {
	cfg, gpus int
	mem       int64
}

// optKey identifies jobs that get identical options, which they then share (read-only).
type optKey struct {
	model    string
	batch    int
	gpus     int
	iterTime time.Duration
}

type optEntry struct {
	opts    []policy.Option
	fast    int
	gc      int
	family  int
	memNote string // where the memory figure came from, when the profile has none
	restart *restartEntry
}

// job builds the simulation job for t, and returns its restart costs.
func (s *setup) job(t trace.Job, file string) (*policy.Job, *restartEntry, error) {
	key := optKey{t.Model, t.Batch, t.GPUs, t.IterTime}
	if e, ok := s.cache[key]; ok {
		j := s.alloc()
		*j = policy.Job{Job: t, Options: e.opts, Fast: e.fast, GC: e.gc, Family: int32(e.family), Xi: 1}
		j.P.Rem = float64(t.Iters)
		if len(e.opts) == 1 && e.opts[0].Cfg >= 0 && s.keys[e.opts[0].Cfg].Model == "" {
			s.noProf[s.names[e.opts[0].Cfg]]++
		}
		if e.memNote != "" {
			s.memSrc[e.memNote]++
		}
		e.restart.jobs++
		return j, e.restart, nil
	}
	j, note, err := s.build(t, file)
	if err != nil {
		return nil, nil, err
	}
	if note != "" {
		s.memSrc[note]++
	}
	model, _ := s.cfg.ModelMap.Resolve(t.Model, t.Batch)
	r := &restartEntry{jobs: 1}
	r.cost, r.src = s.cfg.Restart.restartOf(s.prof, t.Model, model, t.GPUs)
	if s.cfg.OverheadEveryEvent {
		r.loss, _ = profile.LineageRestart(t.Model, t.GPUs)
	}
	s.restarts = append(s.restarts, r)
	s.cache[key] = optEntry{j.Options, j.Fast, j.GC, int(j.Family), note, r}
	return j, r, nil
}

// build resolves t's model and options from the model map, the profile and the trace. A
// configuration whose memory the profile does not know takes the SJF-BSBF authors' constant for
// the trace's model; memNote then says so (or that the job fills a whole GPU, for a model
// outside the authors' eight).
func (s *setup) build(t trace.Job, file string) (*policy.Job, string, error) {
	j := s.alloc()
	j.Job = t
	memNote := ""
	capBytes := s.cfg.Shape.GPUMemBytes
	where := fmt.Sprintf("%s:%d: job %d", file, t.Line, t.ID)
	if t.Line == 0 {
		where = fmt.Sprintf("%s: job %d", file, t.ID)
	}
	model, batch := s.cfg.ModelMap.Resolve(t.Model, t.Batch)
	if s.prof != nil {
		if s.prof.Model(model) == nil {
			via := ""
			if model != t.Model {
				via = fmt.Sprintf(" (mapped from %s)", clip.Quote(t.Model))
			}
			return nil, "", fmt.Errorf("%s: unknown model %s%s (known: %s)", where, clip.Quote(model), via, strings.Join(s.prof.ModelNames(), ", "))
		}
		if batch == 0 {
			batch = s.prof.DefaultBatch(model)
		}
		tooBig := int64(0)
		for _, sub := range s.prof.SubBatches(model, batch) {
			c := profile.Config{Model: model, Batch: batch, SubBatch: sub}
			excl, ok := s.prof.IterTime(c, t.GPUs)
			if !ok {
				continue
			}
			mem, est, _ := s.prof.Mem(c)
			s.estMem = s.estMem || est
			if mem == 0 {
				var note string
				mem, note = s.fallbackMem(t.Model, model)
				memNote = note
			}
			if mem > capBytes {
				tooBig = mem
				continue
			}
			j.Options = append(j.Options, policy.Option{Batch: batch, SubBatch: sub, Excl: s.scaled(excl), Mem: mem, Cfg: s.intern(c.String(), c)})
		}
		if len(j.Options) == 0 && tooBig > 0 {
			return nil, "", fmt.Errorf("%s: model %s needs %.1f GiB per GPU even at its smallest profiled sub-batch; GPUs have %.1f GiB", where, model, float64(tooBig)/float64(cluster.GiB), float64(capBytes)/float64(cluster.GiB))
		}
	}
	if len(j.Options) == 0 {
		if t.IterTime <= 0 {
			if s.prof == nil {
				return nil, "", fmt.Errorf("%s: no iteration time: the trace gives none and no profile was given", where)
			}
			return nil, "", fmt.Errorf("%s: the profile has no step time for %s at batch %d on %d GPUs and the trace gives no iteration time", where, model, batch, t.GPUs)
		}
		name := fmt.Sprintf("%s/%d (trace)", t.Model, t.Batch)
		s.noProf[name]++
		// Such a job fills its GPUs' memory, so that it never shares, unless the policy paces
		// sharing jobs itself (policy.Pacer; below).
		j.Options = []policy.Option{{Batch: t.Batch, SubBatch: t.Batch, Excl: s.scaled(t.IterTime), Mem: capBytes, Cfg: s.intern(name, profile.Config{})}}
	}
	if s.paced {
		// A policy that paces sharing itself assumes memory is enough, as the lineage's AntMan
		// and Muri do: every job takes 1/MaxShare of a GPU's memory.
		for k := range j.Options {
			j.Options[k].Mem = capBytes / int64(max(1, s.cfg.Shape.MaxShare))
		}
	}
	for k, o := range j.Options {
		if o.Excl <= 0 {
			return nil, "", fmt.Errorf("%s: step time of %s below a nanosecond (scaled by %g)", where, s.names[o.Cfg], s.cfg.IterScale)
		}
		if o.Excl < j.Options[j.Fast].Excl {
			j.Fast = k
		}
	}
	j.GC = s.class(t.GPUs)
	for k := range j.Options {
		j.Options[k].Tag = s.tag(policy.Tag{Cfg: j.Options[k].Cfg, GC: j.GC, Mem: j.Options[k].Mem})
	}
	fk := famKey{j.Options[0].Cfg, t.GPUs, j.Options[0].Mem}
	f, ok := s.fams[fk]
	if !ok {
		f = len(s.fams)
		s.fams[fk] = f
	}
	j.Family = int32(f)
	j.P.Rem = float64(t.Iters)
	j.Xi = 1
	return j, memNote, nil
}

// tag returns the dense index of a configuration, GPU-count class and memory (from 1).
func (s *setup) tag(t policy.Tag) int32 {
	if s.tagIdx == nil {
		s.tagIdx, s.tags = map[policy.Tag]int32{}, []policy.Tag{{}}
	}
	if i, ok := s.tagIdx[t]; ok {
		return i
	}
	s.tags = append(s.tags, t)
	s.tagIdx[t] = int32(len(s.tags) - 1)
	return s.tagIdx[t]
}

// fallbackMem is the memory of a job whose profile configuration has none: the SJF-BSBF
// authors' constant for its trace model (workloads/models_msg.py) or, for a model outside their
// eight, a whole GPU (it then never shares). The note says which, for the run's notes.
func (s *setup) fallbackMem(traceModel, profModel string) (int64, string) {
	via := traceModel
	if profModel != traceModel {
		via = fmt.Sprintf("%s (profile model %s)", traceModel, profModel)
	}
	if b, _, ok := profile.AuthorsMem(traceModel); ok {
		return b, fmt.Sprintf("the profile has no memory figure for %s: the SJF-BSBF authors' %d MiB is used", via, b>>20)
	}
	return s.cfg.Shape.GPUMemBytes, fmt.Sprintf("the profile has no memory figure for %s and the authors' table has none: each such job fills its GPUs and never shares", via)
}

// scaled applies Config.IterScale to a step time.
func (s *setup) scaled(d time.Duration) time.Duration {
	if s.cfg.IterScale == 0 || s.cfg.IterScale == 1 {
		return d
	}
	return simtime.FromNanos(float64(d) * s.cfg.IterScale)
}

// env builds the slowdown matrices for every configuration and GPU-count class seen.
func (s *setup) env(mode profile.Mode) *policy.Env {
	e := policy.NewEnv(s.cfg.Shape.MaxShare, mode, s.names, len(s.gcs))
	e.Tags = s.tags
	if s.prof == nil {
		return e
	}
	for gc, gpus := range s.gcs {
		for a, ka := range s.keys {
			if ka.Model == "" {
				continue
			}
			for b, kb := range s.keys {
				if kb.Model == "" {
					continue
				}
				if xi, ok := s.prof.Slowdown(ka, kb, gpus, mode); ok {
					e.SetXi(gc, a, b, xi)
				}
			}
		}
	}
	return e
}

// solo returns the job's solo duration: iterations × the exclusive step time of its fastest option.
func solo(j *policy.Job) time.Duration {
	return simtime.FromNanos(float64(j.Iters) * float64(j.Options[j.Fast].Excl))
}
