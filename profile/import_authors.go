package profile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// authorsDisplay maps the SJF-BSBF authors' model keys onto the display names that key their
// ratio.json and itertime.json (docs/paper.md §2.4).
var authorsDisplay = map[string]string{
	"resnet18":           "ResNet-18",
	"shufflenet_v2_x1_0": "ShuffleNet-v2",
	"vgg19":              "VGG19",
	"vgg16":              "VGG16",
	"dqn":                "DQN",
	"a2c":                "A2C",
	"bert":               "BERT",
	"gpt2":               "GPT2",
}

// AuthorsDisplayName returns the display name the authors' tables use for a model key, and
// whether the key is one of their eight models. Other keys are their own display name.
func AuthorsDisplayName(model string) (string, bool) {
	if d, ok := authorsDisplay[model]; ok {
		return d, true
	}
	return model, false
}

// authorsModelKey maps a display name back to a model key. Unknown names become a lower-case
// key of their letters, digits, '-' and '_'.
func authorsModelKey(display string) (string, bool) {
	for k, d := range authorsDisplay {
		if d == display {
			return k, true
		}
	}
	var b strings.Builder
	for _, r := range strings.ToLower(display) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	return b.String(), false
}

// AuthorsOptions labels the inputs of ImportAuthors.
type AuthorsOptions struct {
	// RatioName and IterTimeName label errors (usually the file names).
	RatioName, IterTimeName string
}

// ImportAuthors converts the SJF-BSBF authors' tables (docs/paper.md §8.3–8.4) into a profile:
// itertime.json {"<Display>": {"<gpus>": seconds}} gives the solo time per iteration and
// ratio.json {"<Display a>": {"<Display b>": {"<gpus of a>": [ξ_noMPS, ξ_MPS]}}} the slowdowns,
// written as a timeslice and an mps pair. Each model runs at the authors' fixed batch (no
// gradient accumulation, sub_batch = batch); memory is the authors' per-model constant. A ξ of
// null or ≤ 0 gives no entry.
func ImportAuthors(ratio, itertime io.Reader, opts AuthorsOptions) (*Table, error) {
	rName := cmp.Or(opts.RatioName, "ratio.json")
	iName := cmp.Or(opts.IterTimeName, "itertime.json")
	iData, err := io.ReadAll(itertime)
	if err != nil {
		return nil, fmt.Errorf("authors: %s: %w", iName, err)
	}
	rData, err := io.ReadAll(ratio)
	if err != nil {
		return nil, fmt.Errorf("authors: %s: %w", rName, err)
	}
	iRoot, err := parseJSON(iData, iName)
	if err != nil {
		return nil, fmt.Errorf("authors: %w", err)
	}
	rRoot, err := parseJSON(rData, rName)
	if err != nil {
		return nil, fmt.Errorf("authors: %w", err)
	}
	badI := func(off int64, format string, args ...any) error {
		return fmt.Errorf("authors: %w", posError(iName, iData, off, format, args...))
	}
	badR := func(off int64, format string, args ...any) error {
		return fmt.Errorf("authors: %w", posError(rName, rData, off, format, args...))
	}
	gpuKey := func(s string) (int, bool) {
		g, err := strconv.Atoi(s)
		return g, err == nil && g >= 1 && g <= 1<<16 && strconv.Itoa(g) == s
	}

	t := &Table{
		GPU:         "NVIDIA RTX A6000 (SJF-BSBF authors' testbed)",
		GPUMemBytes: 49140 << 20,
		Source:      "authors",
		Provenance:  AuthorsProvenance(),
		Pairs:       []Pair{},
	}
	if iRoot.kind != '{' {
		return nil, badI(iRoot.off, "want an object of models, got %s", kindName(iRoot.kind))
	}
	configs := map[string]Config{}
	var unknown []string
	for i, disp := range iRoot.keys {
		key, known := authorsModelKey(disp)
		if key == "" {
			return nil, badI(iRoot.kOffs[i], "model %q: no usable characters for a model key", disp)
		}
		if _, dup := configs[disp]; dup {
			return nil, badI(iRoot.kOffs[i], "model %q appears twice", disp)
		}
		for _, c := range configs {
			if c.Model == key {
				return nil, badI(iRoot.kOffs[i], "model %q maps to key %q, which another name already uses", disp, key)
			}
		}
		batch := authorsBatch[key]
		if !known {
			batch = 1
			unknown = append(unknown, disp)
		}
		v := iRoot.vals[i]
		if v.kind != '{' {
			return nil, badI(v.off, "model %q: want an object of GPU counts, got %s", disp, kindName(v.kind))
		}
		s := Solo{Batch: batch, SubBatch: batch, IterS: GPUMap{}}
		for j, gk := range v.keys {
			g, ok := gpuKey(gk)
			if !ok {
				return nil, badI(v.kOffs[j], "model %q: GPU count %q is not a positive integer", disp, gk)
			}
			x := v.vals[j]
			if x.kind != 'n' || !finitePositive(x.num) {
				return nil, badI(x.off, "model %q on %d GPUs: iteration time must be a positive number of seconds", disp, g)
			}
			s.IterS[g] = x.num
		}
		if len(s.IterS) == 0 {
			return nil, badI(v.off, "model %q: no iteration times", disp)
		}
		if mib, ok := authorsMemMiB[key]; ok {
			s.MemBytes = mib << 20
		}
		configs[disp] = Config{key, batch, batch}
		t.Models = append(t.Models, Model{Name: key, Impl: "authors (" + disp + ")", DefaultBatch: batch, Configs: []Solo{s}})
	}

	if rRoot.kind != '{' {
		return nil, badR(rRoot.off, "want an object of models, got %s", kindName(rRoot.kind))
	}
	var noSolo []string
	skipped := 0
	for i, da := range rRoot.keys {
		va := rRoot.vals[i]
		if va.kind != '{' {
			return nil, badR(va.off, "model %q: want an object of partner models, got %s", da, kindName(va.kind))
		}
		for j, db := range va.keys {
			vb := va.vals[j]
			if vb.kind != '{' {
				return nil, badR(vb.off, "pair %q + %q: want an object of GPU counts, got %s", da, db, kindName(vb.kind))
			}
			ca, okA := configs[da]
			cb, okB := configs[db]
			for k, gk := range vb.keys {
				g, ok := gpuKey(gk)
				if !ok {
					return nil, badR(vb.kOffs[k], "pair %q + %q: GPU count %q is not a positive integer", da, db, gk)
				}
				x := vb.vals[k]
				if x.kind != '[' || len(x.elems) < 1 || len(x.elems) > 2 {
					return nil, badR(x.off, "pair %q + %q on %d GPUs: want [xi_noMPS, xi_MPS]", da, db, g)
				}
				for m, e := range x.elems {
					if e.kind == '0' {
						skipped++
						continue
					}
					if e.kind != 'n' {
						return nil, badR(e.off, "pair %q + %q on %d GPUs: xi must be a number or null, got %s", da, db, g, kindName(e.kind))
					}
					if !finitePositive(e.num) {
						skipped++
						continue
					}
					if !okA || !okB {
						noSolo = append(noSolo, da+"+"+db)
						continue
					}
					mode := Timeslice
					if m == 1 {
						mode = MPS
					}
					t.Pairs = append(t.Pairs, Pair{A: ca, B: cb, GPUs: g, Mode: mode, Xi: e.num})
				}
			}
		}
	}
	t.Notes = append(t.Notes,
		"the SJF-BSBF authors' itertime.json (solo seconds per iteration by GPU count) and ratio.json ([xi without MPS, xi with MPS] by GPU count of a)",
		"each model runs at the authors' fixed per-GPU batch with sub_batch = batch (the physical code has no gradient accumulation)",
		"mem_bytes is the authors' per-model constant (workloads/models_msg.py, MB read as MiB), measured at those batches",
	)
	if len(unknown) > 0 {
		t.Notes = append(t.Notes, "models outside the authors' eight have no known batch and are listed at batch 1: "+strings.Join(unknown, ", "))
	}
	if skipped > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d xi values that are null or ≤ 0 give no pair entry", skipped))
	}
	if len(noSolo) > 0 {
		slices.Sort(noSolo)
		noSolo = slices.Compact(noSolo)
		t.Notes = append(t.Notes, "ratio.json pairs whose models have no itertime.json entry were dropped: "+listNote(noSolo, 8))
	}
	t.Notes = append(t.Notes, setEstimatedMem(t, func(m string) string { return m })...)
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("authors: %w", err)
	}
	return t, nil
}

// AuthorsGPUCounts are the GPU counts of the authors' traces (1 to 32 GPUs per job).
var AuthorsGPUCounts = []int{1, 2, 4, 8, 16, 32}

// ExportOptions shapes ExportAuthors.
type ExportOptions struct {
	// ModelMap, when set, exports the authors' eight models (their keys at their fixed batches)
	// through it: each under its display name, with the numbers of the profile configuration it
	// maps onto, so that the authors' scheduler runs on the traces sharebench runs.
	ModelMap *ModelMap
	// GPUs are the GPU counts written for every model and pair; each takes the profile's value
	// for the largest measured count at or below it (the authors' code looks up a job's own
	// count). Empty: AuthorsGPUCounts with a model map, else the counts the profile measured.
	GPUs []int
}

// ExportAuthors writes t as the SJF-BSBF authors' ratio.json and itertime.json (docs/paper.md §8.3–8.4),
// so that their scheduler can run on a sharebench profile. Without a model map each model is
// exported at its default batch without accumulation (sub_batch = batch; models lacking that
// configuration are left out); the eight authors' models use their display names, others their
// own name. A pair with a timeslice but no mps entry (or the reverse) writes null for the
// missing mode.
func (t *Table) ExportAuthors(ratio, itertime io.Writer, opt ExportOptions) error {
	if err := t.Normalize(); err != nil {
		return fmt.Errorf("export authors: %w", err)
	}
	type entry struct {
		disp string
		c    Config
	}
	var entries []entry
	if opt.ModelMap != nil {
		for _, key := range slices.Sorted(maps.Keys(authorsDisplay)) {
			model, batch := opt.ModelMap.Resolve(key, authorsBatch[key])
			if t.Model(model) == nil {
				return fmt.Errorf("export authors: the model map sends %s to %q, which the profile lacks", key, model)
			}
			if batch == 0 {
				batch = t.DefaultBatch(model)
			}
			c := Config{model, batch, batch}
			if _, ok := t.Solo(c); !ok {
				return fmt.Errorf("export authors: the model map sends %s to %s at batch %d, which the profile lacks without accumulation", key, model, batch)
			}
			entries = append(entries, entry{authorsDisplay[key], c})
		}
	} else {
		seen := map[string]bool{}
		for _, m := range t.Models {
			c := Config{m.Name, m.DefaultBatch, m.DefaultBatch}
			if _, ok := t.Solo(c); !ok {
				continue
			}
			disp, _ := AuthorsDisplayName(m.Name)
			if seen[disp] {
				return fmt.Errorf("export authors: two models share the display name %q", disp)
			}
			seen[disp] = true
			entries = append(entries, entry{disp, c})
		}
	}
	counts := func(c Config) []int {
		if len(opt.GPUs) > 0 {
			return opt.GPUs
		}
		if opt.ModelMap != nil {
			return AuthorsGPUCounts
		}
		s, _ := t.Solo(c)
		return slices.Sorted(maps.Keys(s.IterS))
	}
	iter := map[string]map[string]float64{}
	for _, e := range entries {
		iter[e.disp] = map[string]float64{}
		s, _ := t.Solo(e.c)
		for _, g := range counts(e.c) {
			if v, ok := s.IterS.At(g); ok {
				iter[e.disp][strconv.Itoa(g)] = v
			}
		}
	}
	// Pairs go at the given counts, filled from the largest measured count below, else at the
	// counts measured for the pair.
	filled := len(opt.GPUs) > 0 || opt.ModelMap != nil
	pairCounts := func(a, b Config) []int {
		if filled {
			return counts(a)
		}
		var gs []int
		for _, m := range []Mode{Timeslice, MPS} {
			for _, e := range t.pairs[pairKey{a, b, m}] {
				gs = append(gs, e.gpus)
			}
		}
		slices.Sort(gs)
		return slices.Compact(gs)
	}
	ratios := map[string]map[string]map[string][2]*float64{}
	for _, a := range entries {
		for _, b := range entries {
			for _, g := range pairCounts(a.c, b.c) {
				var pair [2]*float64
				for k, mode := range []Mode{Timeslice, MPS} {
					if xi, ok := t.Slowdown(a.c, b.c, g, mode); ok && (filled || t.measuredAt(a.c, b.c, g, mode)) {
						pair[k] = &xi
					}
				}
				if pair[0] == nil && pair[1] == nil {
					continue
				}
				if ratios[a.disp] == nil {
					ratios[a.disp] = map[string]map[string][2]*float64{}
				}
				if ratios[a.disp][b.disp] == nil {
					ratios[a.disp][b.disp] = map[string][2]*float64{}
				}
				ratios[a.disp][b.disp][strconv.Itoa(g)] = pair
			}
		}
	}
	if err := writeJSONIndent(itertime, iter); err != nil {
		return fmt.Errorf("export authors: itertime: %w", err)
	}
	if err := writeJSONIndent(ratio, ratios); err != nil {
		return fmt.Errorf("export authors: ratio: %w", err)
	}
	return nil
}

// measuredAt reports whether the profile measured the pair (a | b) on exactly gpus GPUs in mode m.
func (t *Table) measuredAt(a, b Config, gpus int, m Mode) bool {
	return slices.ContainsFunc(t.pairs[pairKey{a, b, m}], func(e gpuXi) bool { return e.gpus == gpus })
}

// writeJSONIndent writes v as indented JSON (map keys sorted) with a trailing newline.
func writeJSONIndent(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
