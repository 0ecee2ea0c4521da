package profile

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/internal/clip"
	"github.com/sharebench/sharebench/internal/simtime"
)

// FormatName and Version identify the JSON form written by Write.
const (
	FormatName = "sharebench-profile"
	Version    = 1
)

// Mode is a GPU sharing mechanism.
type Mode string

// The sharing modes a profile can describe.
const (
	// Timeslice is CUDA's default: two processes with their own contexts take turns on the GPU.
	Timeslice Mode = "timeslice"
	// MPS runs the kernels of both processes concurrently through the Multi-Process Service.
	MPS Mode = "mps"
)

// ParseMode accepts "timeslice" or "mps".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Timeslice, MPS:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown sharing mode %s (known: timeslice, mps)", clip.Quote(s))
}

// Config identifies one way to run a model: its per-GPU (global) batch and the sub-batch used
// for gradient accumulation. Batch/SubBatch is the number of micro-steps per optimizer step.
type Config struct {
	Model    string `json:"model"`
	Batch    int    `json:"batch"`
	SubBatch int    `json:"sub_batch"`
}

// String formats c as model/batch/sub-batch, e.g. "resnet50/64/32".
func (c Config) String() string {
	return c.Model + "/" + strconv.Itoa(c.Batch) + "/" + strconv.Itoa(c.SubBatch)
}

// GPUMap maps a GPU count to a value. In JSON its keys are decimal strings ("1", "2", ...).
type GPUMap map[int]float64

// At returns the value for the largest GPU count ≤ gpus, so a measurement made on g GPUs
// applies to jobs on g or more GPUs up to the next measured count. The bool is false when no
// count ≤ gpus is present.
func (m GPUMap) At(gpus int) (float64, bool) {
	best, v := 0, 0.0
	for g, x := range m {
		if g <= gpus && g > best {
			best, v = g, x
		}
	}
	return v, best > 0
}

// Solo is the solo measurement (or estimate) of one Config.
type Solo struct {
	Batch    int `json:"batch"`
	SubBatch int `json:"sub_batch"`
	// IterS is the median time per optimizer step in seconds, by GPU count.
	IterS GPUMap `json:"iter_s"`
	// IterCIS is an optional 95% confidence interval of IterS, by GPU count.
	IterCIS map[int][2]float64 `json:"iter_ci_s,omitempty"`
	// MemBytes is the peak memory per GPU in bytes; 0 means unknown.
	MemBytes int64 `json:"mem_bytes"`
	// MemEstimated is true when MemBytes comes from a model, not from a measurement.
	MemEstimated bool `json:"mem_estimated,omitempty"`
	// N is the number of repeats behind the numbers (0 when not measured by sharebench).
	N int `json:"n,omitempty"`
}

// Model holds everything a profile knows about one model.
type Model struct {
	Name string `json:"name"`
	// Impl names the implementation measured (e.g. "torchvision", "transformers", "torch-encoder").
	Impl string `json:"impl,omitempty"`
	// DefaultBatch is used for trace jobs that give no batch size.
	DefaultBatch int `json:"default_batch"`
	// RestartS is the cost in seconds of (re)starting the job after a preemption, by GPU count.
	RestartS GPUMap `json:"restart_s,omitempty"`
	// Configs lists the measured (batch, sub-batch) configurations.
	Configs []Solo `json:"configs"`
}

// Pair is the slowdown of A when it shares its GPUs with B: A's step time while co-located
// divided by its solo step time, both at the configurations given. It is ordered: the
// slowdown of B next to A is a separate Pair with A and B swapped.
type Pair struct {
	A    Config  `json:"a"`
	B    Config  `json:"b"`
	GPUs int     `json:"gpus"` // GPU count of A in the measurement; applies up to the next measured count
	Mode Mode    `json:"mode"`
	Xi   float64 `json:"xi"`
	// CI is an optional 95% confidence interval of Xi.
	CI *[2]float64 `json:"ci,omitempty"`
	N  int         `json:"n,omitempty"`
}

// Provenance says where the numbers in a table come from.
type Provenance struct {
	// Origin is a repository, paper or host description.
	Origin  string `json:"origin,omitempty"`
	Path    string `json:"path,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Licence string `json:"licence,omitempty"`
	// Command is the sharebench command line that produced the table.
	Command string `json:"command,omitempty"`
	// Host describes the measuring machine (GPU, driver, CUDA, torch) for measured tables.
	Host map[string]string `json:"host,omitempty"`
}

// Table is an interference profile: the simulator's only view of hardware.
type Table struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// GPU names the device the numbers describe, e.g. "NVIDIA H200" or "V100 (Gavel)".
	GPU         string `json:"gpu"`
	GPUMemBytes int64  `json:"gpu_mem_bytes,omitempty"`
	// Source is one of measured, authors, gavel, blox, pollux, muri, synthetic, test.
	Source     string     `json:"source"`
	Provenance Provenance `json:"provenance"`
	Notes      []string   `json:"notes,omitempty"`
	// DefaultRestartS is the restart cost for models without RestartS entries.
	DefaultRestartS float64 `json:"default_restart_s,omitempty"`
	Models          []Model `json:"models"`
	Pairs           []Pair  `json:"pairs"`

	models map[string]int
	solos  map[Config]*Solo
	pairs  map[pairKey][]gpuXi
}

type pairKey struct {
	a, b Config
	mode Mode
}

type gpuXi struct {
	gpus int
	xi   float64
}

// Normalize sorts models, configurations and pairs into canonical order, fills in format and
// version, checks the table and builds its lookup indexes. Importers and the runner call it
// before Write; Load calls it after decoding.
func (t *Table) Normalize() error {
	t.Format, t.Version = FormatName, Version
	slices.SortFunc(t.Models, func(a, b Model) int { return cmp.Compare(a.Name, b.Name) })
	for i := range t.Models {
		slices.SortFunc(t.Models[i].Configs, func(a, b Solo) int {
			return cmp.Or(cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.SubBatch, b.SubBatch))
		})
	}
	slices.SortFunc(t.Pairs, comparePairs)
	return t.index()
}

func compareConfigs(a, b Config) int {
	return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.SubBatch, b.SubBatch))
}

func comparePairs(a, b Pair) int {
	return cmp.Or(compareConfigs(a.A, b.A), compareConfigs(a.B, b.B), cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.GPUs, b.GPUs))
}

// index validates t and builds the lookup maps.
func (t *Table) index() error {
	t.models = make(map[string]int, len(t.Models))
	t.solos = make(map[Config]*Solo)
	t.pairs = make(map[pairKey][]gpuXi, len(t.Pairs))
	if !(t.DefaultRestartS >= 0 && t.DefaultRestartS <= maxRestartS) {
		return fmt.Errorf("default_restart_s: want seconds in [0, %g], got %v", maxRestartS, t.DefaultRestartS)
	}
	for i := range t.Models {
		m := &t.Models[i]
		if m.Name == "" {
			return fmt.Errorf("models[%d]: empty name", i)
		}
		if _, dup := t.models[m.Name]; dup {
			return fmt.Errorf("models[%d]: duplicate model %s", i, clip.Quote(m.Name))
		}
		t.models[m.Name] = i
		if err := checkGPUMap(m.RestartS, 0, maxRestartS); err != nil {
			return fmt.Errorf("model %s: restart_s: %w", m.Name, err)
		}
		if len(m.Configs) == 0 {
			return fmt.Errorf("model %s: no configs", m.Name)
		}
		hasDefault := false
		for j := range m.Configs {
			s := &m.Configs[j]
			c := Config{m.Name, s.Batch, s.SubBatch}
			if s.Batch <= 0 || s.SubBatch <= 0 || s.Batch%s.SubBatch != 0 {
				return fmt.Errorf("model %s: config batch=%d sub_batch=%d: need batch > 0 and sub_batch dividing batch", m.Name, s.Batch, s.SubBatch)
			}
			if _, dup := t.solos[c]; dup {
				return fmt.Errorf("model %s: duplicate config batch=%d sub_batch=%d", m.Name, s.Batch, s.SubBatch)
			}
			if len(s.IterS) == 0 {
				return fmt.Errorf("model %s: config %s: iter_s is empty", m.Name, c)
			}
			if err := checkGPUMap(s.IterS, minIterS, maxIterS); err != nil {
				return fmt.Errorf("model %s: config %s: iter_s: %w", m.Name, c, err)
			}
			if s.MemBytes < 0 {
				return fmt.Errorf("model %s: config %s: mem_bytes: negative", m.Name, c)
			}
			if t.GPUMemBytes > 0 && s.MemBytes > t.GPUMemBytes {
				return fmt.Errorf("model %s: config %s: mem_bytes %d exceeds gpu_mem_bytes %d", m.Name, c, s.MemBytes, t.GPUMemBytes)
			}
			t.solos[c] = s
			hasDefault = hasDefault || s.Batch == m.DefaultBatch
		}
		if !hasDefault {
			return fmt.Errorf("model %s: default_batch %d has no config", m.Name, m.DefaultBatch)
		}
	}
	for i, p := range t.Pairs {
		if _, err := ParseMode(string(p.Mode)); err != nil {
			return fmt.Errorf("pairs[%d] %s+%s: %w", i, p.A, p.B, err)
		}
		for _, c := range []Config{p.A, p.B} {
			if _, ok := t.solos[c]; !ok {
				return fmt.Errorf("pairs[%d]: %s has no solo config in models", i, c)
			}
		}
		if p.GPUs <= 0 {
			return fmt.Errorf("pairs[%d] %s+%s: gpus must be ≥ 1", i, p.A, p.B)
		}
		if !(p.Xi > 0 && p.Xi <= simtime.MaxSlowdown) {
			return fmt.Errorf("pairs[%d] %s+%s: xi must be a number in (0, %d], got %v", i, p.A, p.B, simtime.MaxSlowdown, p.Xi)
		}
		k := pairKey{p.A, p.B, p.Mode}
		for _, e := range t.pairs[k] {
			if e.gpus == p.GPUs {
				return fmt.Errorf("pairs[%d] %s+%s: duplicate entry for mode %s on %d GPUs", i, p.A, p.B, p.Mode, p.GPUs)
			}
		}
		t.pairs[k] = append(t.pairs[k], gpuXi{p.GPUs, p.Xi})
	}
	return nil
}

// Bounds of the times in a profile (the simulator's time model, internal/simtime): a step
// takes from a nanosecond to the horizon, a restart at most a year.
var (
	minIterS    = 1e-9
	maxIterS    = simtime.Horizon.Seconds()
	maxRestartS = simtime.MaxRestart.Seconds()
)

// checkGPUMap checks that every GPU count is positive and every value a number in [lo, hi].
func checkGPUMap(m GPUMap, lo, hi float64) error {
	for g, v := range m {
		if g <= 0 {
			return fmt.Errorf("GPU count %d: must be ≥ 1", g)
		}
		if !(v >= lo && v <= hi) {
			return fmt.Errorf("GPU count %d: want seconds in [%g, %g], got %v", g, lo, hi, v)
		}
	}
	return nil
}

// ModelNames returns the models of t, sorted.
func (t *Table) ModelNames() []string {
	names := make([]string, len(t.Models))
	for i, m := range t.Models {
		names[i] = m.Name
	}
	return names
}

// Model returns the named model, or nil.
func (t *Table) Model(name string) *Model {
	i, ok := t.models[name]
	if !ok {
		return nil
	}
	return &t.Models[i]
}

// DefaultBatch returns the default per-GPU batch of a model, or 0 if the model is unknown.
func (t *Table) DefaultBatch(model string) int {
	if m := t.Model(model); m != nil {
		return m.DefaultBatch
	}
	return 0
}

// Solo returns the solo entry of c.
func (t *Table) Solo(c Config) (*Solo, bool) {
	s, ok := t.solos[c]
	return s, ok
}

// IterTime returns the solo time per optimizer step of c on the given number of GPUs, taken from
// the largest measured GPU count ≤ gpus.
func (t *Table) IterTime(c Config, gpus int) (time.Duration, bool) {
	s, ok := t.solos[c]
	if !ok {
		return 0, false
	}
	v, ok := s.IterS.At(gpus)
	if !ok {
		return 0, false
	}
	return Seconds(v), true
}

// Mem returns the memory per GPU of c in bytes and whether it is an estimate.
func (t *Table) Mem(c Config) (bytes int64, estimated, ok bool) {
	s, ok := t.solos[c]
	if !ok {
		return 0, false, false
	}
	return s.MemBytes, s.MemEstimated, true
}

// SubBatches returns the sub-batches profiled for a model at a batch, largest first.
func (t *Table) SubBatches(model string, batch int) []int {
	m := t.Model(model)
	if m == nil {
		return nil
	}
	var out []int
	for _, s := range m.Configs {
		if s.Batch == batch {
			out = append(out, s.SubBatch)
		}
	}
	slices.Reverse(out)
	return out
}

// Slowdown returns ξ_{a|b}: the factor by which a's step time grows while a shares its GPUs
// with b in mode m, a running on gpus GPUs. The entry of the largest measured GPU count ≤ gpus
// applies. ok is false when the profile has no such pair: the pair is then not shareable.
func (t *Table) Slowdown(a, b Config, gpus int, m Mode) (xi float64, ok bool) {
	best := 0
	for _, e := range t.pairs[pairKey{a, b, m}] {
		if e.gpus <= gpus && e.gpus > best {
			best, xi = e.gpus, e.xi
		}
	}
	return xi, best > 0
}

// Seconds converts float seconds to a Duration, rounding to the nearest nanosecond.
func Seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}
