package profile

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
)

// PolluxOptions tunes ImportPollux.
type PolluxOptions struct {
	// MaxAccum is the largest number of micro-steps per optimizer step: configurations
	// (k·b, b) are written for k = 1, 2, 4, … ≤ MaxAccum. 0 means 8.
	MaxAccum int
	// GPUMemBytes overrides the 16 GiB of the Pollux testbed's T4 GPUs (0 keeps it).
	GPUMemBytes int64
}

// polluxDescriptions describe the Pollux applications (data README).
var polluxDescriptions = map[string]string{
	"bert":        "BERT fine-tuning on SQuAD (Pollux)",
	"cifar10":     "ResNet-18 on CIFAR-10 (Pollux)",
	"deepspeech2": "DeepSpeech2 (Pollux)",
	"imagenet":    "ResNet-50 on ImageNet (Pollux)",
	"ncf":         "NCF recommendation (Pollux)",
	"yolov3":      "YOLOv3 object detection (Pollux)",
}

// polluxMaxLocalBsz are the max_local_bsz overrides of Pollux's simulator/applications.py: a
// larger per-GPU batch needs gradient accumulation there. Other applications use the largest
// measured local batch.
var polluxMaxLocalBsz = map[string]int{"yolov3": 8}

// polluxPoint is one measured step time.
type polluxPoint struct {
	bsz        int
	step, sync float64
}

// polluxCurve is step time vs per-GPU batch for one GPU count, sorted by batch.
type polluxCurve []polluxPoint

// at interpolates the curve linearly in the per-GPU batch, as Pollux's get_throughput does
// (scipy interp1d); ok is false outside the measured range.
func (c polluxCurve) at(b int) (step, sync float64, ok bool) {
	i, found := slices.BinarySearchFunc(c, b, func(p polluxPoint, b int) int { return cmp.Compare(p.bsz, b) })
	if found {
		return c[i].step, c[i].sync, true
	}
	if i == 0 || i == len(c) {
		return 0, 0, false
	}
	lo, hi := c[i-1], c[i]
	f := float64(b-lo.bsz) / float64(hi.bsz-lo.bsz)
	return lo.step + f*(hi.step-lo.step), lo.sync + f*(hi.sync-lo.sync), true
}

// polluxPlacement returns Pollux's consolidated placement of g GPUs on 4-GPU nodes, rotated to
// its lexicographically smallest form as applications.py normalizes it: 5 → "14", 8 → "44".
func polluxPlacement(g int) string {
	var p []int
	for rest := g; rest > 0; rest -= min(rest, 4) {
		p = append(p, min(rest, 4))
	}
	best := ""
	for i := range p {
		var sb strings.Builder
		for _, d := range append(slices.Clone(p[i:]), p[:i]...) {
			sb.WriteString(strconv.Itoa(d))
		}
		if s := sb.String(); best == "" || s < best {
			best = s
		}
	}
	return best
}

// readPolluxCSV reads one of Pollux's CSV files, checks its header and calls row for each data
// line with the line number.
func readPolluxCSV(fsys fs.FS, name, header string, row func(rec []string, line int) error) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s: empty file", name)
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	first := true
	want := strings.Count(header, ",") + 1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if first {
			if strings.Join(rec, ",") != header {
				return fmt.Errorf("%s:%d: header must be %q", name, line, header)
			}
			first = false
			continue
		}
		if len(rec) != want {
			return fmt.Errorf("%s:%d: want %d fields, got %d", name, line, want, len(rec))
		}
		if err := row(rec, line); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
}

// parsePolluxTimes parses local_bsz, step_time and sync_time.
func parsePolluxTimes(bsz, step, sync string) (polluxPoint, error) {
	b, err := strconv.Atoi(strings.TrimSpace(bsz))
	if err != nil || b < 1 || b > 1<<24 {
		return polluxPoint{}, fmt.Errorf("local_bsz: want a positive integer, got %q", bsz)
	}
	st, err := strconv.ParseFloat(strings.TrimSpace(step), 64)
	if err != nil || !finitePositive(st) {
		return polluxPoint{}, fmt.Errorf("step_time: want a positive number, got %q", step)
	}
	sy, err := strconv.ParseFloat(strings.TrimSpace(sync), 64)
	if err != nil || sy < 0 || math.IsNaN(sy) || sy > st {
		return polluxPoint{}, fmt.Errorf("sync_time: want a number in [0, step_time], got %q", sync)
	}
	return polluxPoint{b, st, sy}, nil
}

// ImportPollux converts Pollux's step-time traces into a profile. fsys holds one directory per
// application (e.g. "imagenet/placements.csv" and, optionally, "imagenet/scalability.csv");
// models names the directories to read.
//
// placements.csv gives step_time and sync_time (the all-reduce part of it) per placement and
// per-GPU batch. For g GPUs the importer uses Pollux's consolidated placement (full 4-GPU nodes,
// e.g. "44" for 8), and scalability.csv's rows with num_replicas = 4·num_nodes beyond 16 GPUs.
// Configurations are written for power-of-two sub-batches b within the measured range (linear
// interpolation between measured batches, as Pollux does) and batches k·b: with accum = k−1,
// step_time(k·b) = step_time(b) + accum·(step_time(b) − sync_time(b)) (docs/paper.md §6). Pollux has no
// co-location data: the profile has no pairs.
func ImportPollux(fsys fs.FS, models []string, opts PolluxOptions) (*Table, error) {
	maxAccum := cmp.Or(opts.MaxAccum, 8)
	if maxAccum < 1 {
		return nil, fmt.Errorf("pollux: max accumulation %d: must be ≥ 1", maxAccum)
	}
	if len(models) == 0 {
		return nil, errors.New("pollux: no application directories given")
	}
	t := &Table{
		GPU:         "NVIDIA T4 (Pollux testbed: 16 nodes × 4 GPUs, per the Pollux paper)",
		GPUMemBytes: cmp.Or(opts.GPUMemBytes, 16<<30),
		Source:      "pollux",
		Provenance:  PolluxProvenance(),
		Pairs:       []Pair{},
	}
	sorted := slices.Clone(models)
	slices.Sort(sorted)
	var interpolated []string
	for i, name := range sorted {
		if i > 0 && sorted[i-1] == name {
			return nil, fmt.Errorf("pollux: application %q given twice", name)
		}
		if !fs.ValidPath(name) || name == "." || strings.Contains(name, "/") {
			return nil, fmt.Errorf("pollux: invalid application directory %q", name)
		}
		m, interp, err := polluxModel(fsys, name, maxAccum)
		if err != nil {
			return nil, fmt.Errorf("pollux: %w", err)
		}
		if interp {
			interpolated = append(interpolated, name)
		}
		t.Models = append(t.Models, *m)
	}
	t.Notes = append(t.Notes,
		"iter_s is Pollux's measured step_time per optimizer step; on g GPUs it is the consolidated placement (4-GPU nodes: 1..4 one node, 8 = \"44\", 16 = \"4444\") and, above 16 GPUs, scalability.csv at num_nodes = g/4",
		fmt.Sprintf("configurations (k·b, b) for power-of-two sub-batches b and k = 1, 2, 4, … ≤ %d use Pollux's gradient-accumulation model: "+
			"step_time(k·b) = step_time(b) + (k−1)·(step_time(b) − sync_time(b)), where sync_time is the all-reduce part (compute repeated, gradients synchronised once)", maxAccum),
		"sub-batches between two measured per-GPU batches are interpolated linearly, as in Pollux's applications.py; sub-batches outside the measured range are not written",
		"Pollux has no co-location data: the profile has no pairs, so no pair is shareable; combine it with a pair source to simulate sharing",
		"the validation-*.csv files (statistical efficiency) are not used",
		"a configuration lacking large GPU counts (the measured batch range shrinks with more GPUs) applies its largest measured count to bigger jobs (GPUMap lookup rule)",
	)
	if len(interpolated) > 0 {
		t.Notes = append(t.Notes, "interpolated sub-batches occur in "+strings.Join(interpolated, ", "))
	}
	if _, ok := polluxMaxLocalBsz["yolov3"]; ok && slices.Contains(sorted, "yolov3") {
		t.Notes = append(t.Notes, "yolov3: sub-batches capped at 8 as in Pollux's applications.py (max_local_bsz=8); its measured step times are not monotone in the batch")
	}
	if opts.GPUMemBytes == 0 {
		t.Notes = append(t.Notes, "gpu_mem_bytes is the 16 GiB of a T4")
	}
	t.Notes = append(t.Notes, setEstimatedMem(t, func(m string) string { return "pollux:" + m })...)
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("pollux: %w", err)
	}
	return t, nil
}

// polluxModel builds the profile model of one Pollux application directory.
func polluxModel(fsys fs.FS, name string, maxAccum int) (*Model, bool, error) {
	byPlacement := map[string]polluxCurve{}
	seen := map[string]int{}
	minB, maxB := math.MaxInt, 0
	err := readPolluxCSV(fsys, path.Join(name, "placements.csv"), "placement,local_bsz,step_time,sync_time", func(rec []string, line int) error {
		pl := strings.TrimSpace(rec[0])
		if pl == "" || strings.Trim(pl, "123456789") != "" || len(pl) > 16 {
			return fmt.Errorf("placement: want GPU counts per node as digits 1-9, got %q", rec[0])
		}
		p, err := parsePolluxTimes(rec[1], rec[2], rec[3])
		if err != nil {
			return err
		}
		k := pl + "/" + strconv.Itoa(p.bsz)
		if prev, dup := seen[k]; dup {
			return fmt.Errorf("placement %s local_bsz %d appears twice (first on line %d)", pl, p.bsz, prev)
		}
		seen[k] = line
		byPlacement[pl] = append(byPlacement[pl], p)
		minB, maxB = min(minB, p.bsz), max(maxB, p.bsz)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if len(byPlacement) == 0 {
		return nil, false, fmt.Errorf("%s/placements.csv: no data rows", name)
	}
	curves := map[int]polluxCurve{}
	for g := 1; g <= 16; g++ {
		if c, ok := byPlacement[polluxPlacement(g)]; ok {
			curves[g] = c
		}
	}
	scal := map[int]polluxCurve{}
	seenScal := map[[2]int]int{}
	err = readPolluxCSV(fsys, path.Join(name, "scalability.csv"), "num_nodes,num_replicas,local_bsz,step_time,sync_time", func(rec []string, line int) error {
		nodes, err1 := strconv.Atoi(strings.TrimSpace(rec[0]))
		reps, err2 := strconv.Atoi(strings.TrimSpace(rec[1]))
		if err1 != nil || err2 != nil || nodes < 1 || reps < nodes || reps > 1<<16 {
			return fmt.Errorf("num_nodes, num_replicas: want integers with 1 ≤ num_nodes ≤ num_replicas, got %q, %q", rec[0], rec[1])
		}
		p, err := parsePolluxTimes(rec[2], rec[3], rec[4])
		if err != nil {
			return err
		}
		if reps != 4*nodes || reps <= 16 {
			return nil
		}
		k := [2]int{reps, p.bsz}
		if prev, dup := seenScal[k]; dup {
			return fmt.Errorf("num_replicas %d local_bsz %d appears twice (first on line %d)", reps, p.bsz, prev)
		}
		seenScal[k] = line
		scal[reps] = append(scal[reps], p)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	for g, c := range scal {
		curves[g] = c
	}
	for _, c := range curves {
		slices.SortFunc(c, func(a, b polluxPoint) int { return cmp.Compare(a.bsz, b.bsz) })
	}
	gs := make([]int, 0, len(curves))
	for g := range curves {
		gs = append(gs, g)
	}
	slices.Sort(gs)

	maxSub := maxB
	if cap, ok := polluxMaxLocalBsz[name]; ok {
		maxSub = min(maxSub, cap)
	}
	m := &Model{Name: name, Impl: cmp.Or(polluxDescriptions[name], "Pollux application "+name)}
	interpolated := false
	for b := 1; b <= maxSub; b *= 2 {
		if b < minB {
			continue
		}
		for k := 1; k <= maxAccum; k *= 2 {
			s := Solo{Batch: k * b, SubBatch: b, IterS: GPUMap{}}
			for _, g := range gs {
				step, sync, ok := curves[g].at(b)
				if !ok {
					continue
				}
				if _, exact := slices.BinarySearchFunc(curves[g], b, func(p polluxPoint, b int) int { return cmp.Compare(p.bsz, b) }); !exact {
					interpolated = true
				}
				v := roundSig(step + float64(k-1)*(step-sync))
				if finitePositive(v) {
					s.IterS[g] = v
				}
			}
			if len(s.IterS) > 0 {
				m.Configs = append(m.Configs, s)
			}
		}
		if b > 1<<30 {
			break
		}
	}
	if len(m.Configs) == 0 {
		return nil, false, fmt.Errorf("%s: no power-of-two per-GPU batch lies in the measured range %d..%d on any consolidated placement", name, minB, maxSub)
	}
	m.DefaultBatch = defaultBatchOf(m)
	return m, interpolated, nil
}
