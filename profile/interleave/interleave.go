// Package interleave builds the interference profile that Muri's interleaving model implies for
// the jobs of Muri-dialect traces, so that a policy that reads slowdowns from a profile (sjf-bsbf,
// sjf-ffs) shares GPUs under the same interference as muri-s and muri-l.
//
// A job's solo step time is the trace's iteration time; the slowdown of job A next to job B on
// A's GPU count is the iteration time at which muri-s and muri-l run the pair
// (schedulers.GroupIterTime, from the two jobs' stage times) over A's iteration time × 1.015, its
// time alone under the lineage's flags (--iter-time-scale 1.015), which the experiments that use
// this profile set.
package interleave

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// alone is the lineage's factor on a job's iteration time when it runs alone (Muri jobs.py
// itertime_overhead_list[0]).
const alone = 1.015

// kind is what the model knows of the jobs of one model, batch and GPU count.
type kind struct {
	iter   float64 // seconds
	stages [3]float64
	where  string // file:line of the first job of the kind
}

type kindKey struct {
	model       string
	batch, gpus int
}

// FromTraces returns the profile of the jobs of the Muri-dialect trace files: one configuration
// per model and batch, with the trace's iteration time by GPU count, and a time-slicing pair for
// every two kinds on the same GPU count. Jobs of one model, batch and GPU count must agree on
// their iteration and stage times. Memory is the SJF-BSBF authors' figure for the model where
// it has one (Muri's model assumes memory never binds).
func FromTraces(files []string) (*profile.Table, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("interleave: no trace files")
	}
	kinds := map[kindKey]kind{}
	for _, f := range files {
		jobs, err := trace.ReadFile(f, trace.FormatMuri, trace.Options{})
		if err != nil {
			return nil, fmt.Errorf("interleave: %w", err)
		}
		for _, j := range jobs {
			where := fmt.Sprintf("%s:%d", filepath.Base(f), j.Line)
			if j.Stages == nil || j.IterTime <= 0 {
				return nil, fmt.Errorf("interleave: %s: job %d has no iteration or stage times", where, j.ID)
			}
			k := kind{iter: j.IterTime.Seconds(), where: where}
			for s, d := range j.Stages.Time {
				k.stages[s] = d.Seconds()
			}
			key := kindKey{j.Model, j.Batch, j.GPUs}
			if old, ok := kinds[key]; ok {
				if old.iter != k.iter || old.stages != k.stages {
					return nil, fmt.Errorf("interleave: %s: job %d (%s, batch %d, %d GPUs): iteration or stage times differ from those of %s", where, j.ID, j.Model, j.Batch, j.GPUs, old.where)
				}
				continue
			}
			kinds[key] = k
		}
	}
	keys := slices.SortedFunc(maps.Keys(kinds), func(a, b kindKey) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.batch, b.batch), cmp.Compare(a.gpus, b.gpus))
	})

	t := &profile.Table{
		GPU:    "Muri's traces (interleaving model)",
		Source: "muri",
		Provenance: profile.Provenance{
			Origin:  "github.com/Rivendile/Muri (Zhao et al., SIGCOMM'22): the traces' iteration and stage times, the interleaving model of simulator/matching.py calc_iteration_time",
			Path:    "simulator/trace-data",
			Commit:  "4e69a78ce75f629a5a00abd48150a1860b341ce6",
			Licence: "Apache-2.0",
		},
		Notes: []string{
			"solo step times are the traces' iteration times; a pair's slowdowns are the interleaving model's iteration time of the pair (muri-s, muri-l) over each job's iteration time × 1.015: run with --iter-time-scale 1.015",
			"memory per GPU is the SJF-BSBF authors' figure for the model where it has one; Muri's model assumes memory never binds",
			"pairs only on equal GPU counts, as Muri groups only jobs of one GPU count",
		},
		Pairs: []profile.Pair{},
	}
	models := map[string]int{}
	for _, k := range keys {
		i, ok := models[k.model]
		if !ok {
			i = len(t.Models)
			models[k.model] = i
			t.Models = append(t.Models, profile.Model{Name: k.model, DefaultBatch: k.batch})
		}
		m := &t.Models[i]
		c := slices.IndexFunc(m.Configs, func(s profile.Solo) bool { return s.Batch == k.batch })
		if c < 0 {
			mem, _, _ := profile.AuthorsMem(k.model)
			m.Configs = append(m.Configs, profile.Solo{Batch: k.batch, SubBatch: k.batch, IterS: profile.GPUMap{}, MemBytes: mem})
			c = len(m.Configs) - 1
		}
		m.Configs[c].IterS[k.gpus] = kinds[k].iter
	}
	for _, a := range keys {
		for _, b := range keys {
			if a.gpus != b.gpus {
				continue
			}
			ka, kb := kinds[a], kinds[b]
			t.Pairs = append(t.Pairs, profile.Pair{
				A:    profile.Config{Model: a.model, Batch: a.batch, SubBatch: a.batch},
				B:    profile.Config{Model: b.model, Batch: b.batch, SubBatch: b.batch},
				GPUs: a.gpus,
				Mode: profile.Timeslice,
				Xi:   schedulers.GroupIterTime(ka.stages, kb.stages) / (ka.iter * alone),
			})
		}
	}
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("interleave: %w", err)
	}
	return t, nil
}
