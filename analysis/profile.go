package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/profile"
)

// gib is the number of bytes in a GiB.
const gib = 1 << 30

// gpuCounts returns the GPU counts measured for any configuration of t, sorted.
func gpuCounts(t *profile.Table) []int {
	set := map[int]bool{}
	for _, m := range t.Models {
		for _, c := range m.Configs {
			for g := range c.IterS {
				set[g] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// PairSlice identifies one ξ matrix of a profile: a sharing mode and a GPU count.
type PairSlice struct {
	// Mode is the sharing mode.
	Mode profile.Mode
	// GPUs is the GPU count of the measurement.
	GPUs int
}

// String formats s as "timeslice, 1 GPU".
func (s PairSlice) String() string {
	if s.GPUs == 1 {
		return string(s.Mode) + ", 1 GPU"
	}
	return fmt.Sprintf("%s, %d GPUs", s.Mode, s.GPUs)
}

// PairSlices returns the (mode, GPU count) combinations that have pair entries, sorted by
// mode (timeslice first) and GPU count.
func PairSlices(t *profile.Table) []PairSlice {
	set := map[PairSlice]bool{}
	for _, p := range t.Pairs {
		set[PairSlice{p.Mode, p.GPUs}] = true
	}
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, func(a, b PairSlice) int {
		return cmp.Or(cmp.Compare(modeRank(a.Mode), modeRank(b.Mode)), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.GPUs, b.GPUs))
	})
	return out
}

func modeRank(m profile.Mode) int {
	switch m {
	case profile.Timeslice:
		return 0
	case profile.MPS:
		return 1
	}
	return 2
}

// XiMatrix is the ξ matrix of one pair slice: Xi[i][j] is the slowdown of Configs[i] while it
// shares its GPUs with Configs[j]; NaN where the profile has no entry.
type XiMatrix struct {
	// Slice is the mode and GPU count.
	Slice PairSlice
	// Configs label the rows and columns.
	Configs []profile.Config
	// Xi holds the slowdowns; NaN marks a missing pair.
	Xi [][]float64
}

// Missing counts the ordered pairs without an entry.
func (m *XiMatrix) Missing() int {
	n := 0
	for _, row := range m.Xi {
		for _, v := range row {
			if math.IsNaN(v) {
				n++
			}
		}
	}
	return n
}

// SlowdownMatrix returns the ξ matrix of a profile for one mode and GPU count over the
// configurations that appear in any pair of that slice, in the profile's canonical order
// (model, batch, sub-batch).
func SlowdownMatrix(t *profile.Table, s PairSlice) XiMatrix {
	set := map[profile.Config]bool{}
	for _, p := range t.Pairs {
		if p.Mode == s.Mode && p.GPUs == s.GPUs {
			set[p.A], set[p.B] = true, true
		}
	}
	cfgs := slices.Collect(maps.Keys(set))
	slices.SortFunc(cfgs, compareConfig)
	idx := map[profile.Config]int{}
	for i, c := range cfgs {
		idx[c] = i
	}
	xi := make([][]float64, len(cfgs))
	for i := range xi {
		xi[i] = make([]float64, len(cfgs))
		for j := range xi[i] {
			xi[i][j] = math.NaN()
		}
	}
	for _, p := range t.Pairs {
		if p.Mode == s.Mode && p.GPUs == s.GPUs {
			xi[idx[p.A]][idx[p.B]] = p.Xi
		}
	}
	return XiMatrix{Slice: s, Configs: cfgs, Xi: xi}
}

func compareConfig(a, b profile.Config) int {
	return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.SubBatch, b.SubBatch))
}

// fmtMs formats seconds as milliseconds.
func fmtMs(s float64) string { return fmtFixed(s*1000, 1) }

// fmtGiB formats bytes as GiB.
func fmtGiB(b int64) string { return fmtFixed(float64(b)/gib, 2) }

// ProfileTables returns the tables of "sharebench profile show": the configurations with
// their step time per GPU count, memory and repeat count, then one ξ matrix per sharing mode
// and GPU count. name labels the titles (usually the file name).
func ProfileTables(t *profile.Table, name string) []Table {
	counts := gpuCounts(t)
	header := []string{"model", "batch", "sub-batch"}
	for _, g := range counts {
		header = append(header, fmt.Sprintf("step %d GPU%s (ms)", g, plural(g)))
	}
	header = append(header, "memory (GiB)", "memory source", "repeats")
	cfg := Table{Title: fmt.Sprintf("Profile %s: configurations (%s, %s)", name, t.GPU, t.Source), Header: header}
	estimates := 0
	for _, m := range t.Models {
		for _, c := range m.Configs {
			row := []string{m.Name, strconv.Itoa(c.Batch), strconv.Itoa(c.SubBatch)}
			for _, g := range counts {
				if v, ok := c.IterS[g]; ok {
					row = append(row, fmtMs(v))
				} else {
					row = append(row, "–")
				}
			}
			mem, src := "–", "unknown"
			if c.MemBytes > 0 {
				mem, src = fmtGiB(c.MemBytes), "measured"
				if c.MemEstimated {
					src = "estimate"
					estimates++
				}
			}
			n := "–"
			if c.N > 0 {
				n = strconv.Itoa(c.N)
			}
			row = append(row, mem, src, n)
			cfg.Rows = append(cfg.Rows, row)
		}
	}
	cfg.Notes = append(cfg.Notes,
		"step: median seconds per optimizer step (batch/sub-batch micro-steps), in ms, by GPU count; a value applies up to the next measured count.")
	if t.GPUMemBytes > 0 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("GPU memory: %s GiB.", fmtGiB(t.GPUMemBytes)))
	}
	if estimates > 0 {
		cfg.Notes = append(cfg.Notes, fmt.Sprintf("%d configuration(s) have estimated, not measured, memory.", estimates))
	}
	if o := provenance(t.Provenance); o != "" {
		cfg.Notes = append(cfg.Notes, "provenance: "+o)
	}
	for _, n := range t.Notes {
		cfg.Notes = append(cfg.Notes, "profile note: "+oneLine(n))
	}
	tables := []Table{cfg}
	for _, s := range PairSlices(t) {
		tables = append(tables, xiTable(SlowdownMatrix(t, s), name))
	}
	if len(t.Pairs) == 0 {
		tables[0].Notes = append(tables[0].Notes, "The profile has no pair entries: no job may share a GPU.")
	}
	return tables
}

// provenance formats the non-empty provenance fields.
func provenance(p profile.Provenance) string {
	var parts []string
	for _, kv := range [][2]string{{"origin", p.Origin}, {"path", p.Path}, {"commit", p.Commit}, {"licence", p.Licence}, {"command", p.Command}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Host)) {
		parts = append(parts, k+" "+p.Host[k])
	}
	return strings.Join(parts, "; ")
}

// xiTable renders a ξ matrix: rows are the slowed job a, columns its partner b.
func xiTable(m XiMatrix, name string) Table {
	t := Table{Title: fmt.Sprintf("Profile %s: ξ (%s), row = job, column = partner", name, m.Slice)}
	t.Header = append(t.Header, "job / partner")
	for _, c := range m.Configs {
		t.Header = append(t.Header, c.String())
	}
	below := 0
	for i, c := range m.Configs {
		row := []string{c.String()}
		for j := range m.Configs {
			v := m.Xi[i][j]
			if math.IsNaN(v) {
				row = append(row, "n/a")
				continue
			}
			if v < 1 {
				below++
			}
			row = append(row, fmtFixed(v, 2))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes, "ξ = the row job's step time while it shares its GPUs with the column job ÷ its solo step time (≥ 1 means slower).")
	if n := m.Missing(); n > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("n/a: %d of %d ordered pairs are not in the profile; policies never co-locate them.", n, len(m.Configs)*len(m.Configs)))
	}
	if below > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d entr%s below 1 (measurement noise); the simulator uses max(ξ, 1).", below, pluralY(below)))
	}
	return t
}

func pluralY(n int) string {
	if n == 1 {
		return "y is"
	}
	return "ies are"
}

// configGPU is a configuration measured on a GPU count.
type configGPU struct {
	cfg  profile.Config
	gpus int
}

// soloMap indexes the step times of t by configuration and GPU count.
func soloMap(t *profile.Table) map[configGPU]float64 {
	out := map[configGPU]float64{}
	for _, m := range t.Models {
		for _, c := range m.Configs {
			for g, v := range c.IterS {
				out[configGPU{profile.Config{Model: m.Name, Batch: c.Batch, SubBatch: c.SubBatch}, g}] = v
			}
		}
	}
	return out
}

// pairID is an ordered pair entry's identity.
type pairID struct {
	a, b profile.Config
	mode profile.Mode
	gpus int
}

func pairMap(t *profile.Table) map[pairID]float64 {
	out := map[pairID]float64{}
	for _, p := range t.Pairs {
		out[pairID{p.A, p.B, p.Mode, p.GPUs}] = p.Xi
	}
	return out
}

// ProfileDiff compares two profiles (two GPUs, or two measurement runs): step times of the
// common configurations with the ratio B/A, ξ of the common pairs with the difference B − A,
// and the configurations and pairs present in only one of them. nameA and nameB label them.
func ProfileDiff(a, b *profile.Table, nameA, nameB string) []Table {
	sa, sb := soloMap(a), soloMap(b)
	steps := Table{
		Title:  fmt.Sprintf("Step time: %s (A, %s) vs %s (B, %s)", nameA, a.GPU, nameB, b.GPU),
		Header: []string{"configuration", "GPUs", "A step (ms)", "B step (ms)", "B/A"},
	}
	var only Table
	only.Title = "Present in only one profile"
	only.Header = []string{"kind", "entry", "only in"}
	keys := slices.Collect(maps.Keys(sa))
	for k := range sb {
		if _, ok := sa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y configGPU) int { return cmp.Or(compareConfig(x.cfg, y.cfg), cmp.Compare(x.gpus, y.gpus)) })
	logSum, n := 0.0, 0
	for _, k := range keys {
		va, okA := sa[k]
		vb, okB := sb[k]
		entry := fmt.Sprintf("%s on %d GPU%s", k.cfg, k.gpus, plural(k.gpus))
		switch {
		case okA && okB:
			steps.Rows = append(steps.Rows, []string{k.cfg.String(), strconv.Itoa(k.gpus), fmtMs(va), fmtMs(vb), fmtFixed(vb/va, 3)})
			logSum += math.Log(vb / va)
			n++
		case okA:
			only.Rows = append(only.Rows, []string{"configuration", entry, "A"})
		default:
			only.Rows = append(only.Rows, []string{"configuration", entry, "B"})
		}
	}
	steps.Notes = append(steps.Notes, "B/A < 1 means B is faster.")
	if n > 0 {
		steps.Notes = append(steps.Notes, fmt.Sprintf("Geometric mean of B/A over %d common configuration(s) and GPU counts: %s.", n, fmtFixed(math.Exp(logSum/float64(n)), 3)))
	} else {
		steps.Notes = append(steps.Notes, "The profiles have no configuration in common.")
	}

	pa, pb := pairMap(a), pairMap(b)
	pairs := Table{
		Title:  "Pair slowdown ξ (row job next to partner)",
		Header: []string{"job", "partner", "mode", "GPUs", "A ξ", "B ξ", "B − A"},
	}
	pkeys := slices.Collect(maps.Keys(pa))
	for k := range pb {
		if _, ok := pa[k]; !ok {
			pkeys = append(pkeys, k)
		}
	}
	slices.SortFunc(pkeys, func(x, y pairID) int {
		return cmp.Or(compareConfig(x.a, y.a), compareConfig(x.b, y.b), cmp.Compare(modeRank(x.mode), modeRank(y.mode)), cmp.Compare(x.mode, y.mode), cmp.Compare(x.gpus, y.gpus))
	})
	common, sumAbs := 0, 0.0
	for _, k := range pkeys {
		va, okA := pa[k]
		vb, okB := pb[k]
		entry := fmt.Sprintf("%s next to %s (%s, %d GPU%s)", k.a, k.b, k.mode, k.gpus, plural(k.gpus))
		switch {
		case okA && okB:
			pairs.Rows = append(pairs.Rows, []string{k.a.String(), k.b.String(), string(k.mode), strconv.Itoa(k.gpus),
				fmtFixed(va, 2), fmtFixed(vb, 2), fmtSigned(vb-va, 2)})
			common++
			sumAbs += math.Abs(vb - va)
		case okA:
			only.Rows = append(only.Rows, []string{"pair", entry, "A"})
		default:
			only.Rows = append(only.Rows, []string{"pair", entry, "B"})
		}
	}
	if common > 0 {
		pairs.Notes = append(pairs.Notes, fmt.Sprintf("%d common pair(s); mean |B − A| = %s.", common, fmtFixed(sumAbs/float64(common), 3)))
	} else {
		pairs.Notes = append(pairs.Notes, "The profiles have no pair in common.")
	}
	only.Notes = append(only.Notes, fmt.Sprintf("A = %s, B = %s.", nameA, nameB))
	if len(only.Rows) == 0 {
		only.Notes = append(only.Notes, "Both profiles cover the same configurations and pairs.")
	}
	return []Table{steps, pairs, only}
}
