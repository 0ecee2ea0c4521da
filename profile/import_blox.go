package profile

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// BloxOptions says where ImportBlox takes solo step times from: norm_speed.csv has none.
type BloxOptions struct {
	// Solo, when set, supplies iter_s (and memory) for the configurations it has.
	Solo *Table
	// SoloName labels Solo in the notes (e.g. its file name).
	SoloName string
	// Relative allows configurations without a solo time: they get the placeholder iter_s = 1.0
	// (normalized, not seconds) on 1 GPU, which the lookup rules apply to every GPU count, and a
	// note says so. Without it such configurations are an error.
	Relative bool
	// GPUMemBytes sets gpu_mem_bytes (0: unknown; the data do not name the GPU).
	GPUMemBytes int64
}

// bloxHeader is the header of Blox's norm_speed.csv.
const bloxHeader = "index,model1,dataset1,gpu_num1,batch_size1,speed1,co_pipeline_rank,pipeline_strategy,model2,dataset2,gpu_num2,batch_size2,speed2"

// bloxSide is one job of a norm_speed.csv row.
type bloxSide struct {
	model string
	gpus  int
	batch string
	speed float64
}

// bloxConfig converts a Blox batch ("64", or "256/16" = global/micro-batch of a Megatron job
// that is data-parallel over gpus GPUs) into a per-GPU Config.
func bloxConfig(model, batch string, gpus int) (Config, error) {
	global, micro, micro_ := strings.Cut(batch, "/")
	g, err := strconv.Atoi(global)
	if err != nil || g <= 0 || g > 1<<24 {
		return Config{}, fmt.Errorf("batch %q: want a positive integer or global/micro", batch)
	}
	if !micro_ {
		return Config{model, g, g}, nil
	}
	m, err := strconv.Atoi(micro)
	if err != nil || m <= 0 || m > 1<<24 {
		return Config{}, fmt.Errorf("batch %q: micro-batch must be a positive integer", batch)
	}
	if g%gpus != 0 || (g/gpus)%m != 0 {
		return Config{}, errIndivisible
	}
	return Config{model, g / gpus, m}, nil
}

var errIndivisible = errors.New("global batch not divisible into micro-batches over the GPUs")

// ImportBlox converts Blox's norm_speed.csv into a profile. name labels errors and notes.
//
// Each row gives the normalized speeds (1.0 = alone) of two jobs sharing the same GPUs. For
// every ordered pair the slowdown is ξ = 1 / speed, averaged over the rows that measure it
// (ξ = 1 / mean speed; n counts the rows). Micro-batched entries ("256/16") of the Megatron
// models are kept when their strategy is data-parallel (DP…): per GPU that is batch
// global/gpus with sub-batch micro. Pipeline- and tensor-parallel rows and the pipeline-only
// baselines (model2 "Empty") have no counterpart in the profile format and are skipped. A speed
// of 0 (out of memory, or failed) gives no entry. The file has no solo step times: see
// BloxOptions.
func ImportBlox(r io.Reader, name string, opts BloxOptions) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("blox: %s: %w", name, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("blox: %s: empty file", name)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	type key struct {
		a, b Config
		gpus int
	}
	speeds := map[key][]float64{}
	configGPUs := map[Config]map[int]bool{}
	addConfig := func(c Config, g int) {
		if configGPUs[c] == nil {
			configGPUs[c] = map[int]bool{}
		}
		configGPUs[c][g] = true
	}
	var skipEmpty, skipParallel, skipGPUs, skipIndivisible, zeros, rows int
	header := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("blox: %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("blox: %s:%d: %s", name, line, fmt.Sprintf(format, args...))
		}
		if header {
			if strings.Join(rec, ",") != bloxHeader {
				return nil, bad("header must be %q", bloxHeader)
			}
			header = false
			continue
		}
		if len(rec) != 13 {
			return nil, bad("want 13 fields, got %d", len(rec))
		}
		rows++
		side := func(m, g, b, s string, col int) (bloxSide, error) {
			gn, err := strconv.Atoi(strings.TrimSpace(g))
			if err != nil || gn < 0 || gn > 1<<16 {
				return bloxSide{}, bad("gpu_num%d: want an integer ≥ 0, got %q", col, g)
			}
			sp, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || sp < 0 || math.IsNaN(sp) || math.IsInf(sp, 0) {
				return bloxSide{}, bad("speed%d: want a number ≥ 0, got %q", col, s)
			}
			return bloxSide{strings.ToLower(strings.TrimSpace(m)), gn, strings.TrimSpace(b), sp}, nil
		}
		s1, err := side(rec[1], rec[3], rec[4], rec[5], 1)
		if err != nil {
			return nil, err
		}
		s2, err := side(rec[8], rec[10], rec[11], rec[12], 2)
		if err != nil {
			return nil, err
		}
		if s1.model == "" || strings.ContainsAny(s1.model, "/ ") {
			return nil, bad("model1: invalid name %q", rec[1])
		}
		if s2.model == "empty" {
			skipEmpty++
			continue
		}
		if s2.model == "" || strings.ContainsAny(s2.model, "/ ") {
			return nil, bad("model2: invalid name %q", rec[8])
		}
		if s1.gpus < 1 || s2.gpus < 1 {
			return nil, bad("gpu_num must be ≥ 1 for a co-located pair")
		}
		strategy := strings.TrimSpace(rec[7])
		micro := strings.Contains(s1.batch, "/") || strings.Contains(s2.batch, "/")
		if micro && !strings.HasPrefix(strategy, "DP") {
			skipParallel++
			continue
		}
		if s1.gpus != s2.gpus {
			skipGPUs++
			continue
		}
		c1, err1 := bloxConfig(s1.model, s1.batch, s1.gpus)
		c2, err2 := bloxConfig(s2.model, s2.batch, s2.gpus)
		for i, err := range []error{err1, err2} {
			if err != nil && !errors.Is(err, errIndivisible) {
				return nil, bad("batch_size%d: %v", i+1, err)
			}
		}
		if err1 != nil || err2 != nil {
			skipIndivisible++
			continue
		}
		addConfig(c1, s1.gpus)
		addConfig(c2, s2.gpus)
		for _, p := range []struct {
			a, b Config
			s    float64
			g    int
		}{{c1, c2, s1.speed, s1.gpus}, {c2, c1, s2.speed, s2.gpus}} {
			if p.s == 0 {
				zeros++
				continue
			}
			k := key{p.a, p.b, p.g}
			speeds[k] = append(speeds[k], p.s)
		}
	}
	if header {
		return nil, fmt.Errorf("blox: %s: no header", name)
	}

	t := &Table{
		GPU:         "unknown (Blox; the scripts' paths suggest NERSC Perlmutter, NVIDIA A100)",
		GPUMemBytes: opts.GPUMemBytes,
		Source:      "blox",
		Provenance:  BloxProvenance(),
		Pairs:       []Pair{},
	}
	configs := make([]Config, 0, len(configGPUs))
	for c := range configGPUs {
		configs = append(configs, c)
	}
	slices.SortFunc(configs, compareConfigs)
	models := map[string]*Model{}
	var names, fromSolo, placeholder, missing []string
	for _, c := range configs {
		s := Solo{Batch: c.Batch, SubBatch: c.SubBatch, IterS: GPUMap{}}
		if opts.Solo != nil {
			if src, ok := opts.Solo.Solo(c); ok {
				for g, v := range src.IterS {
					s.IterS[g] = v
				}
				s.MemBytes, s.MemEstimated = src.MemBytes, src.MemEstimated
				fromSolo = append(fromSolo, c.String())
			}
		}
		if len(s.IterS) == 0 {
			if !opts.Relative {
				missing = append(missing, c.String())
				continue
			}
			s.IterS[1] = 1
			placeholder = append(placeholder, c.String())
		}
		m := models[c.Model]
		if m == nil {
			m = &Model{Name: c.Model, Impl: "blox"}
			models[c.Model] = m
			names = append(names, c.Model)
		}
		m.Configs = append(m.Configs, s)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("blox: %s has no solo step times and %d configurations have none from another profile (%s): "+
			"pass a profile that covers them (--solo-from), or allow placeholder iter_s = 1.0 (--relative)", name, len(missing), listNote(missing, 6))
	}
	for _, n := range names {
		m := models[n]
		m.DefaultBatch = defaultBatchOf(m)
		t.Models = append(t.Models, *m)
	}
	keys := make([]key, 0, len(speeds))
	for k := range speeds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y key) int {
		return cmp.Or(compareConfigs(x.a, y.a), compareConfigs(x.b, y.b), cmp.Compare(x.gpus, y.gpus))
	})
	for _, k := range keys {
		ss := speeds[k]
		sum := 0.0
		for _, v := range ss {
			sum += v
		}
		xi := roundSig(float64(len(ss)) / sum)
		if !finitePositive(xi) {
			return nil, fmt.Errorf("blox: %s: %s+%s on %d GPUs: speeds give no finite slowdown", name, k.a, k.b, k.gpus)
		}
		t.Pairs = append(t.Pairs, Pair{A: k.a, B: k.b, GPUs: k.gpus, Mode: Timeslice, Xi: xi, N: len(ss)})
	}

	t.Notes = append(t.Notes,
		"xi = 1 / normalized speed (speed 1.0 = the job alone on the same GPUs); an ordered pair measured in several rows gets xi = 1 / mean speed and n = number of rows",
		"the co-located jobs shared the same GPUs as separate processes (recorded as mode timeslice); no MPS data",
		"Megatron entries \"global/micro\" (Bert-Large 256/16, GPT2-Medium 512/8) with data-parallel strategy DP24 on g GPUs become batch = global/g per GPU with sub_batch = micro",
		fmt.Sprintf("%d data rows: %d pipeline-only baselines (model2 Empty) and %d pipeline- or tensor-parallel rows (no counterpart in a data-parallel profile) were skipped", rows, skipEmpty, skipParallel),
	)
	if zeros > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d speeds of 0 (out of memory or failed) give no pair entry: those pairs are not shareable", zeros))
	}
	if skipGPUs > 0 || skipIndivisible > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d rows with different GPU counts and %d rows whose global batch does not split into micro-batches were skipped", skipGPUs, skipIndivisible))
	}
	if len(fromSolo) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("solo iter_s (and memory) of %d configurations come from %s: %s", len(fromSolo), cmp.Or(opts.SoloName, "another profile"), listNote(fromSolo, 8)))
	}
	if len(placeholder) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("RELATIVE: norm_speed.csv has no solo step times; iter_s = 1.0 of %d configurations is a placeholder (normalized units, not seconds) "+
			"(given for 1 GPU, so it applies to every GPU count): use this profile for its slowdowns only, with solo times taken from the trace or another profile (%s)",
			len(placeholder), listNote(placeholder, 6)))
	}
	if opts.GPUMemBytes == 0 {
		t.Notes = append(t.Notes, "gpu_mem_bytes is unknown: the data do not name the GPU")
	}
	t.Notes = append(t.Notes, setEstimatedMem(t, func(m string) string { return "blox:" + m })...)
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("blox: %s: %w", name, err)
	}
	return t, nil
}
