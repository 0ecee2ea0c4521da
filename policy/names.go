package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	// KeyExternal runs the policy in another process (package policy/external): the spec
	// "external:CMD" stands for external{"cmd":"CMD"}.
	KeyExternal = "external"
)

// Victim-selection modes of the preemptive path.
const (
	// VictimsAuthors preempts lower-priority jobs one by one until the job fits, and does not
	// restore them if it never fits (the authors' code, docs/paper.md §5.8).
	VictimsAuthors = "authors"
	// VictimsTentative preempts only if the job then fits.
	VictimsTentative = "tentative"
)

// Factory builds a policy from its JSON arguments; nil or empty arguments give the defaults.
type Factory func(args json.RawMessage) (Policy, error)

// Info describes a registered policy for listings.
type Info struct {
	Name     string
	Brief    string
	Defaults string // default arguments as JSON
}

// Registry maps policy keys to factories. It is a plain value: build it, pass it, merge it.
type Registry struct {
	factories map[string]Factory
	infos     []Info
	aliases   map[string]string // alias → spec
}

// Register adds a policy; registering a key twice is an error.
func (r *Registry) Register(info Info, f Factory) error {
	if r.factories == nil {
		r.factories = map[string]Factory{}
	}
	if _, dup := r.factories[info.Name]; dup {
		return fmt.Errorf("policy %q registered twice", info.Name)
	}
	r.factories[info.Name] = f
	r.infos = append(r.infos, info)
	return nil
}

// Alias makes name expand to spec (a key with arguments).
func (r *Registry) Alias(name, spec string) error {
	if r.aliases == nil {
		r.aliases = map[string]string{}
	}
	if _, dup := r.aliases[name]; dup {
		return fmt.Errorf("alias %q registered twice", name)
	}
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("alias %q shadows a policy key", name)
	}
	r.aliases[name] = spec
	return nil
}

// Infos lists the registered policies in registration order.
func (r *Registry) Infos() []Info { return slices.Clone(r.infos) }

// Aliases returns the aliases and their expansions, sorted by alias.
func (r *Registry) Aliases() [][2]string {
	var out [][2]string
	for a, s := range r.aliases {
		out = append(out, [2]string{a, s})
	}
	slices.SortFunc(out, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
	return out
}

// Resolve expands an alias and splits a spec "key" or `key{"arg":value}` into key and arguments.
// "external:CMD" resolves to external{"cmd":"CMD"}, so the command may hold braces.
func (r *Registry) Resolve(spec string) (key string, args json.RawMessage, err error) {
	spec = strings.TrimSpace(spec)
	if exp, ok := r.aliases[spec]; ok {
		spec = exp
	}
	key, rest, hasArgs := strings.Cut(spec, "{")
	if hasArgs {
		args = json.RawMessage("{" + rest)
	}
	if cmd, ok := strings.CutPrefix(spec, KeyExternal+":"); ok {
		key, args = KeyExternal, cmdArgs(strings.TrimSpace(cmd))
	}
	if _, ok := r.factories[key]; !ok {
		return "", nil, fmt.Errorf("unknown policy %q (known: %s; run \"sharebench policies\")", key, strings.Join(r.keys(), ", "))
	}
	return key, args, nil
}

// New builds the policy named by spec: a key, a key with JSON arguments, or an alias.
func (r *Registry) New(spec string) (Policy, error) {
	key, args, err := r.Resolve(spec)
	if err != nil {
		return nil, err
	}
	p, err := r.factories[key](args)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", key, err)
	}
	return p, nil
}

func (r *Registry) keys() []string {
	var ks []string
	for _, i := range r.infos {
		ks = append(ks, i.Name)
	}
	return ks
}

// decode fills dst (holding the defaults) from args, rejecting unknown fields.
func decode(args json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("arguments %s: %w", args, err)
	}
	if dec.More() {
		return fmt.Errorf("arguments %s: trailing data", args)
	}
	return nil
}

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

// cmdArgs is {"cmd":cmd}, with the command's < > & kept as they are.
func cmdArgs(cmd string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{"cmd": cmd}); err != nil {
		panic(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// external is the factory of external policies, installed by package policy/external (which
// imports this package, so cannot be registered from here directly).
var external struct {
	info Info
	f    Factory
}

// SetExternal installs the factory of KeyExternal; Builtin registers it once installed.
func SetExternal(info Info, f Factory) { external.info, external.f = info, f }

// Builtin returns a registry with the five built-in policies, the external one when package
// policy/external is linked in, and the authors' names as aliases.
// Unlike the authors' scripts, sjf-ffs and sjf-bsbf without a suffix are non-preemptive (the
// paper's headline variants); "-preempt" selects the preemptive path.
func Builtin() *Registry {
	r := &Registry{}
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
	must(r.Register(Info{KeyFIFO, "FIFO as the authors' fifo (Lai-JX/Scheduler schedulers.py): submission order, exclusive YARN placement, preemptive (victims from the lowest priority up, only jobs with > 100 iterations left)", mustJSON(fifo)}, func(raw json.RawMessage) (Policy, error) {
		a := fifo
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		return newFIFO(a), victims(a.Victims)
	}))
	must(r.Register(Info{KeySJF, "SRTF as the authors' sjf (Lai-JX/Scheduler schedulers.py): remaining time, exclusive YARN placement, preemptive as fifo", mustJSON(sjf)}, func(raw json.RawMessage) (Policy, error) {
		a := sjf
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		return newSJF(a), victims(a.Victims)
	}))
	must(r.Register(Info{KeyTiresias, "2D-LAS as the Tiresias/Muri simulators' dlas-gpu (Rivendile/Muri simulator/run_sim.py dlas_sim_jobs): queues by GPU-time, every job re-decided at every event by counting free GPUs, waiting jobs behind running ones in each queue; preemptive", mustJSON(tir)}, func(raw json.RawMessage) (Policy, error) {
		a := tir
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		return newTiresias(a)
	}))
	must(r.Register(Info{KeyTiresiasEntry, "2D-LAS on the authors' physical loop (Lai-JX/Scheduler Tiresias_jobs, jobs_placement): first come first served by queue entry, YARN placement, preemptive as fifo, starvation promotion", mustJSON(tirEntry)}, func(raw json.RawMessage) (Policy, error) {
		a := tirEntry
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		if err := victims(a.Victims); err != nil {
			return nil, err
		}
		return newTiresiasEntry(a)
	}))
	must(r.Register(Info{KeySJFFFS, "SJF with aggressive first-fit sharing as the authors' sjf-ffs-no-preempt (merge_alloc_res): idle GPUs first, then any GPU with room, no benefit check; no preemption", mustJSON(ffs)}, func(raw json.RawMessage) (Policy, error) {
		a := ffs
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		return newSJFFFS(a), victims(a.Victims)
	}))
	must(r.Register(Info{KeySJFBSBF, "SJF-BSBF as the authors' sjf-bsbf-no-preempt (bsbf_alloc_res, share_check): idle GPUs first, then partners passing the Theorem 1 share check by t_con, plus the paper's sub-batch choice; no preemption", mustJSON(bsbf)}, func(raw json.RawMessage) (Policy, error) {
		a := bsbf
		if err := decode(raw, &a); err != nil {
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
