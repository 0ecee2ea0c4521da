package profile

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// GavelOptions selects what ImportGavel reads from a Gavel throughputs file.
type GavelOptions struct {
	// GPU is the worker type: "k80", "p100" or "v100" (case-insensitive). Required.
	GPU string
	// GPUMemBytes overrides the nominal memory of the worker type (0 keeps it).
	GPUMemBytes int64
}

// gavelGPUs are the worker types of Gavel's throughput files with their nominal memory per GPU.
var gavelGPUs = map[string]struct {
	name   string
	memGiB int64
}{
	"k80":  {"NVIDIA K80 (Gavel)", 12},
	"p100": {"NVIDIA P100 (Gavel)", 16},
	"v100": {"NVIDIA V100 (Gavel)", 16},
}

// The patterns of Gavel's job names compile on first use: package initialisation runs at
// every start of sharebench, and only an import of Gavel's file needs them.
var (
	gavelJobRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\('(.+)', ([0-9]+)\)$`) })
	gavelBatchRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.+) \(batch size ([0-9]+)\)$`) })
)

// gavelJob is one Gavel job type: a model at a batch size with a scale factor (GPU count).
type gavelJob struct {
	model string // sharebench key, e.g. "resnet18"
	batch int
	scale int
}

func (j gavelJob) config() Config { return Config{j.model, j.batch, j.batch} }

// gavelModelKey turns a Gavel model name ("ResNet-18", "LM") into a lower-case key of letters
// and digits ("resnet18", "lm").
func gavelModelKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parseGavelJob parses "('ResNet-18 (batch size 16)', 1)". Job types without a batch size
// (A3C, CycleGAN) get batch 1.
func parseGavelJob(s string) (gavelJob, error) {
	m := gavelJobRE().FindStringSubmatch(s)
	if m == nil {
		return gavelJob{}, fmt.Errorf("job type %q is not of the form ('<model> (batch size B)', <scale factor>)", s)
	}
	scale, err := strconv.Atoi(m[2])
	if err != nil || scale < 1 || scale > 1<<16 {
		return gavelJob{}, fmt.Errorf("job type %q: scale factor must be a positive integer", s)
	}
	name, batch := m[1], 1
	if bm := gavelBatchRE().FindStringSubmatch(name); bm != nil {
		b, err := strconv.Atoi(bm[2])
		if err != nil || b < 1 || b > 1<<24 {
			return gavelJob{}, fmt.Errorf("job type %q: batch size must be a positive integer", s)
		}
		name, batch = bm[1], b
	}
	key := gavelModelKey(name)
	if key == "" {
		return gavelJob{}, fmt.Errorf("job type %q: model name has no letters or digits", s)
	}
	return gavelJob{key, batch, scale}, nil
}

// ImportGavel converts one worker type of a Gavel throughputs file (simulation_throughputs.json
// or physical_cluster_throughputs.json) into a profile. name labels errors and provenance.
//
// Gavel stores, per worker type and job type (model, batch size, scale factor), the isolated
// throughput under "null" and, per co-located job type, the pair [own, other] of throughputs.
// Throughputs are steps per second summed over the job's workers, so the time per optimizer step
// on s GPUs is s / throughput. The slowdown of a next to b is ξ = isolated / co-located
// throughput of a. Zero throughputs (out of memory, or co-location of different scale factors,
// which Gavel does not measure) give no entry; the returned notes say how many.
func ImportGavel(r io.Reader, name string, opts GavelOptions) (*Table, error) {
	gpu := strings.ToLower(opts.GPU)
	info, ok := gavelGPUs[gpu]
	if !ok {
		return nil, fmt.Errorf("gavel: unknown GPU %q (known: k80, p100, v100)", opts.GPU)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("gavel: %s: %w", name, err)
	}
	root, err := parseJSON(data, name)
	if err != nil {
		return nil, fmt.Errorf("gavel: %w", err)
	}
	bad := func(off int64, format string, args ...any) error {
		return fmt.Errorf("gavel: %w", posError(name, data, off, format, args...))
	}
	if root.kind != '{' {
		return nil, bad(root.off, "want an object of worker types, got %s", kindName(root.kind))
	}
	var workers *jnode
	var workerTypes []string
	for i, k := range root.keys {
		workerTypes = append(workerTypes, k)
		if k == gpu {
			workers = root.vals[i]
		}
	}
	if workers == nil {
		return nil, fmt.Errorf("gavel: %s: no worker type %q (the file has %s)", name, gpu, strings.Join(workerTypes, ", "))
	}
	if workers.kind != '{' {
		return nil, bad(workers.off, "worker type %q: want an object of job types, got %s", gpu, kindName(workers.kind))
	}

	type coEntry struct {
		other gavelJob
		own   float64
		off   int64
	}
	iso := map[gavelJob]float64{}
	isoOff := map[gavelJob]int64{}
	co := map[gavelJob][]coEntry{}
	var order []gavelJob
	for i, k := range workers.keys {
		job, err := parseGavelJob(k)
		if err != nil {
			return nil, bad(workers.kOffs[i], "%v", err)
		}
		if _, dup := iso[job]; dup {
			return nil, bad(workers.kOffs[i], "job type %q: model %s batch %d scale %d appears twice", k, job.model, job.batch, job.scale)
		}
		v := workers.vals[i]
		if v.kind != '{' {
			return nil, bad(v.off, "job type %q: want an object, got %s", k, kindName(v.kind))
		}
		hasNull := false
		for j, ok := range v.keys {
			val := v.vals[j]
			if ok == "null" {
				if val.kind != 'n' || val.num < 0 {
					return nil, bad(val.off, "job type %q: isolated throughput must be a number ≥ 0", k)
				}
				iso[job], isoOff[job], hasNull = val.num, val.off, true
				continue
			}
			other, err := parseGavelJob(ok)
			if err != nil {
				return nil, bad(v.kOffs[j], "%v", err)
			}
			if val.kind != '[' || len(val.elems) != 2 || val.elems[0].kind != 'n' || val.elems[1].kind != 'n' {
				return nil, bad(val.off, "job types %q + %q: want [own throughput, other throughput]", k, ok)
			}
			if val.elems[0].num < 0 || val.elems[1].num < 0 {
				return nil, bad(val.off, "job types %q + %q: negative throughput", k, ok)
			}
			co[job] = append(co[job], coEntry{other, val.elems[0].num, val.off})
		}
		if !hasNull {
			return nil, bad(v.off, "job type %q: no isolated (\"null\") throughput", k)
		}
		order = append(order, job)
	}

	t := &Table{
		GPU:         info.name,
		GPUMemBytes: info.memGiB << 30,
		Source:      "gavel",
		Provenance:  GavelProvenance(),
		Pairs:       []Pair{},
	}
	if opts.GPUMemBytes > 0 {
		t.GPUMemBytes = opts.GPUMemBytes
	}
	base := path.Base(strings.ReplaceAll(name, "\\", "/"))
	if base == "simulation_throughputs.json" || base == "physical_cluster_throughputs.json" {
		t.Provenance.Path = "scheduler/" + base
	} else {
		t.Provenance.Path = base
	}

	// Solo step times.
	solos := map[Config]*Solo{}
	var isoZero []string
	slices.SortFunc(order, func(a, b gavelJob) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.batch, b.batch), cmp.Compare(a.scale, b.scale))
	})
	for _, job := range order {
		tp := iso[job]
		if tp == 0 {
			isoZero = append(isoZero, fmt.Sprintf("%s/%d on %d", job.model, job.batch, job.scale))
			continue
		}
		c := job.config()
		s := solos[c]
		if s == nil {
			s = &Solo{Batch: c.Batch, SubBatch: c.SubBatch, IterS: GPUMap{}}
			solos[c] = s
		}
		it := roundSig(float64(job.scale) / tp)
		if !finitePositive(it) {
			return nil, bad(isoOff[job], "job type %s/%d scale %d: isolated throughput %v gives no finite step time", job.model, job.batch, job.scale, tp)
		}
		s.IterS[job.scale] = it
	}
	models := map[string]*Model{}
	var names []string
	for c, s := range solos {
		m := models[c.Model]
		if m == nil {
			m = &Model{Name: c.Model, Impl: "gavel"}
			models[c.Model] = m
			names = append(names, c.Model)
		}
		m.Configs = append(m.Configs, *s)
	}
	slices.Sort(names)
	for _, n := range names {
		m := models[n]
		slices.SortFunc(m.Configs, func(a, b Solo) int { return cmp.Compare(a.Batch, b.Batch) })
		m.DefaultBatch = defaultBatchOf(m)
		t.Models = append(t.Models, *m)
	}

	// Pairs.
	zeroPairs, zeroMulti, crossScale, noSolo := 0, 0, 0, 0
	for _, job := range order {
		for _, e := range co[job] {
			if e.other.scale != job.scale {
				if e.own != 0 {
					crossScale++
				}
				continue
			}
			if e.own == 0 {
				if job.scale == 1 {
					zeroPairs++
				} else {
					zeroMulti++
				}
				continue
			}
			if iso[job] == 0 || solos[e.other.config()] == nil {
				noSolo++
				continue
			}
			xi := roundSig(iso[job] / e.own)
			if !finitePositive(xi) {
				return nil, bad(e.off, "job types %s/%d + %s/%d: co-located throughput %v gives no finite slowdown", job.model, job.batch, e.other.model, e.other.batch, e.own)
			}
			t.Pairs = append(t.Pairs, Pair{A: job.config(), B: e.other.config(), GPUs: job.scale, Mode: Timeslice, Xi: xi})
		}
	}

	t.Notes = append(t.Notes,
		fmt.Sprintf("worker type %s of %s; Gavel throughputs are steps/s summed over the job's workers: iter_s = scale factor / isolated throughput", gpu, t.Provenance.Path),
		"xi = isolated / co-located throughput of a (Gavel's space sharing of two processes on one GPU, recorded as mode timeslice); no MPS data",
		"sub_batch = batch: Gavel jobs use no gradient accumulation; A3C and CycleGAN have no batch size in Gavel and are listed at batch 1",
		"Gavel's resnet18 is the CIFAR-10 ResNet-18 (32×32 images), resnet50 is ImageNet; transformer is Multi30k translation, lm a WikiText-2 LSTM, recommendation an ML-20M autoencoder",
		fmt.Sprintf("gpu_mem_bytes is the nominal %d GiB of the worker type", t.GPUMemBytes>>30),
	)
	if zeroPairs > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d co-located throughputs of 0 on 1 GPU (out of memory, or the pair failed) give no pair entry: those pairs are not shareable", zeroPairs))
	}
	if zeroMulti > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d co-located entries on 2 or more GPUs are 0 (Gavel did not measure multi-GPU co-location) and give no pair entry", zeroMulti))
	}
	if crossScale > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d non-zero co-located entries between different scale factors were ignored", crossScale))
	}
	if noSolo > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d co-located entries whose partner has no isolated throughput were dropped", noSolo))
	}
	if len(isoZero) > 0 {
		t.Notes = append(t.Notes, "isolated throughput 0 (did not run, e.g. out of memory) for "+listNote(isoZero, 10)+": no iter_s for those GPU counts")
	}
	pairGPUs := map[int]bool{}
	for _, p := range t.Pairs {
		pairGPUs[p.GPUs] = true
	}
	if len(pairGPUs) == 1 && pairGPUs[1] {
		t.Notes = append(t.Notes, "co-location was measured on 1 GPU only (Gavel packs multi-GPU jobs only with equal scale factors and its files hold zeros there); by the lookup rules these 1-GPU slowdowns apply to jobs on any GPU count")
	}
	t.Notes = append(t.Notes, setEstimatedMem(t, func(m string) string { return "gavel:" + m })...)
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("gavel: %s: %w", name, err)
	}
	return t, nil
}
