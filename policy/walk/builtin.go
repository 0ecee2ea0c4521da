package walk

import (
	"encoding/json"
	"fmt"

	"github.com/sharebench/sharebench/policy"
)

// Registry keys of the built-in policies.
const (
	KeyFIFO     = "fifo"
	KeySJF      = "sjf"
	KeyTiresias = "tiresias"
	// KeyTiresiasEntry is 2D-LAS on the authors' physical scheduling loop (see TiresiasEntry).
	KeyTiresiasEntry = "tiresias-entry-order"
	KeySJFFFS        = "sjf-ffs"
	KeySJFBSBF       = "sjf-bsbf"
)

// Victim-selection modes of the preemptive path.
const (
	// VictimsAuthors preempts lower-priority jobs one by one until the job fits, and does not
	// restore them if it never fits (the authors' code, docs/paper.md §5.8).
	VictimsAuthors = "authors"
	// VictimsTentative preempts only if the job then fits.
	VictimsTentative = "tentative"
)

func victims(v string) error {
	if v != VictimsAuthors && v != VictimsTentative {
		return fmt.Errorf("victims: want %q or %q, got %q", VictimsAuthors, VictimsTentative, v)
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// external is the factory of external policies, installed by package policy/external (which
// imports this package, so cannot be registered from here directly).
var external struct {
	info policy.Info
	f    policy.Factory
}

// SetExternal installs the factory of KeyExternal; Builtin registers it once installed.
func SetExternal(info policy.Info, f policy.Factory) { external.info, external.f = info, f }

// Builtin returns a registry with the five built-in policies, the external one when package
// policy/external is linked in, and the authors' names as aliases.
// Unlike the authors' scripts, sjf-ffs and sjf-bsbf without a suffix are non-preemptive (the
// paper's headline variants); "-preempt" selects the preemptive path.
func Builtin() *policy.Registry {
	r := &policy.Registry{}
	fifo := FIFOArgs{Preempt: true, Victims: VictimsAuthors}
	sjf := SJFArgs{Preempt: true, Victims: VictimsAuthors}
	// The simulator lineage's dlas-gpu: num_queue = 3, so of its limits 3250/7200/18000 GPU-seconds
	// only the first two apply.
	tir := TiresiasArgs{LimitsS: []float64{3250, 7200}, Service: "gpu-time"}
	// 2D-LAS on the authors' physical loop, with the lineage's limits; the authors' own settings
	// are the tiresias-testbed alias.
	tirEntry := TiresiasEntryArgs{LimitsS: []float64{3250, 7200}, Service: "gpu-time", Preempt: true, Victims: VictimsAuthors}
	ffs := SJFFFSArgs{Victims: VictimsAuthors}
	bsbf := SJFBSBFArgs{Victims: VictimsAuthors, SubBatch: true}
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(r.Register(policy.Info{KeyFIFO, "FIFO as the authors' fifo (Lai-JX/Scheduler schedulers.py): submission order, exclusive YARN placement, preemptive (victims from the lowest priority up, only jobs with > 100 iterations left)", mustJSON(fifo)}, func(raw json.RawMessage) (policy.Policy, error) {
		a := fifo
		if err := policy.DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return newFIFO(a), victims(a.Victims)
	}))
	must(r.Register(policy.Info{KeySJF, "SRTF as the authors' sjf (Lai-JX/Scheduler schedulers.py): remaining time, exclusive YARN placement, preemptive as fifo", mustJSON(sjf)}, func(raw json.RawMessage) (policy.Policy, error) {
		a := sjf
		if err := policy.DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return newSJF(a), victims(a.Victims)
	}))
	must(r.Register(policy.Info{KeyTiresias, "2D-LAS as the Tiresias/Muri simulators' dlas-gpu (Rivendile/Muri simulator/run_sim.py dlas_sim_jobs): queues by GPU-time, every job re-decided at every event by counting free GPUs, waiting jobs behind running ones in each queue; preemptive", mustJSON(tir)}, func(raw json.RawMessage) (policy.Policy, error) {
		a := tir
		if err := policy.DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return newTiresias(a)
	}))
	must(r.Register(policy.Info{KeyTiresiasEntry, "2D-LAS on the authors' physical loop (Lai-JX/Scheduler Tiresias_jobs, jobs_placement): first come first served by queue entry, YARN placement, preemptive as fifo, starvation promotion", mustJSON(tirEntry)}, func(raw json.RawMessage) (policy.Policy, error) {
		a := tirEntry
		if err := policy.DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		if err := victims(a.Victims); err != nil {
			return nil, err
		}
		return newTiresiasEntry(a)
	}))
	must(r.Register(policy.Info{KeySJFFFS, "SJF with aggressive first-fit sharing as the authors' sjf-ffs-no-preempt (merge_alloc_res): idle GPUs first, then any GPU with room, no benefit check; no preemption", mustJSON(ffs)}, func(raw json.RawMessage) (policy.Policy, error) {
		a := ffs
		if err := policy.DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return newSJFFFS(a), victims(a.Victims)
	}))
	must(r.Register(policy.Info{KeySJFBSBF, "SJF-BSBF as the authors' sjf-bsbf-no-preempt (bsbf_alloc_res, share_check): idle GPUs first, then partners passing the Theorem 1 share check by t_con, plus the paper's sub-batch choice; no preemption", mustJSON(bsbf)}, func(raw json.RawMessage) (policy.Policy, error) {
		a := bsbf
		if err := policy.DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return newSJFBSBF(a), victims(a.Victims)
	}))
	if external.f != nil {
		must(r.Register(external.info, external.f))
	}
	// The authors' names (docs/paper.md §5.1), built from a grammar: base, "s" for the consolidating
	// placement, "-no-preempt"/"-preempt", "-m" for MPS.
	// The authors' Tiresias (their physical code): 2 queues, 700 s of wall time, starvation factor
	// 1; tiresias-authors adds its quirk of walking in arrival order.
	testbed := KeyTiresiasEntry + `{"limits_s":[700],"service":"time","starve_factor":1}`
	authors := KeyTiresiasEntry + `{"limits_s":[700],"service":"time","starve_factor":1,"authors_order":true}`
	must(r.Alias("tiresias-testbed", testbed))
	must(r.Alias("tiresias-authors", authors))
	must(r.Alias("Tiresias", authors))
	must(r.Alias("fifo-no-preempt", KeyFIFO+`{"preempt":false}`))
	must(r.Alias("sjf-no-preempt", KeySJF+`{"preempt":false}`))
	must(r.Alias("sjf-bsbf-fixed", KeySJFBSBF+`{"sub_batch":false}`))
	for _, base := range []string{"sjf-ffs", "sjf-bsbf"} {
		for _, cons := range []bool{false, true} {
			for _, pre := range []string{"", "-no-preempt", "-preempt"} {
				for _, mps := range []bool{false, true} {
					name := base
					if cons {
						name += "s"
					}
					name += pre
					if mps {
						name += "-m"
					}
					if name == base {
						continue
					}
					args := map[string]bool{}
					if cons {
						args["consolidate"] = true
					}
					if pre == "-preempt" {
						args["preempt"] = true
					}
					if mps {
						args["mps"] = true
					}
					spec := base
					if len(args) > 0 {
						spec += mustJSON(args)
					}
					must(r.Alias(name, spec))
				}
			}
		}
	}
	return r
}
