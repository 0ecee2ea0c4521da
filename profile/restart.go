package profile

import (
	"slices"
	"time"
)

// lineageRestartS is the per-model, per-GPU-count (re)start overhead in seconds of the Muri
// simulator (Rivendile/Muri, simulator/run_sim.py overhead_dict, Apache-2.0), measured by Muri's
// authors for the eight models their and the SJF-BSBF authors' traces use. Keys are GPU counts.
var lineageRestartS = map[string]map[int]float64{
	"vgg16":              {1: 7, 2: 7, 4: 8, 8: 9, 16: 9, 32: 10},
	"vgg19":              {1: 7, 2: 7, 4: 8, 8: 9, 16: 10, 32: 10},
	"resnet18":           {1: 4, 2: 5, 4: 5, 8: 7, 16: 7, 32: 7},
	"shufflenet_v2_x1_0": {1: 4, 2: 4, 4: 5, 8: 5, 16: 7, 32: 8},
	"bert":               {1: 10, 2: 10, 4: 10, 8: 10, 16: 10, 32: 10},
	"gpt2":               {1: 10, 2: 10, 4: 10, 8: 10, 16: 10, 32: 10},
	"a2c":                {1: 38, 2: 39, 4: 39, 8: 46, 16: 46, 32: 46},
	"dqn":                {1: 5, 2: 5, 4: 6, 8: 6, 16: 8, 32: 8},
}

// LineageDefaultRestartS is the lineage's overhead for a model outside its table.
const LineageDefaultRestartS = 10

// LineageRestart returns the Muri simulator's (re)start overhead of a trace model on gpus GPUs:
// the entry for the largest GPU count ≤ gpus (the lineage's table has 1, 2, 4, 8, 16 and 32), or
// LineageDefaultRestartS for a model outside the table. known is false in the latter case.
func LineageRestart(model string, gpus int) (d time.Duration, known bool) {
	byGPUs, ok := lineageRestartS[model]
	if !ok {
		return Seconds(LineageDefaultRestartS), false
	}
	counts := make([]int, 0, len(byGPUs))
	for g := range byGPUs {
		counts = append(counts, g)
	}
	slices.Sort(counts)
	v := byGPUs[counts[0]]
	for _, g := range counts {
		if g <= gpus {
			v = byGPUs[g]
		}
	}
	return Seconds(v), true
}

// RestartFor returns the restart cost the profile gives for a model on gpus GPUs: the model's
// own entry for the largest GPU count ≤ gpus, else the table's default when it is set. ok is
// false when the profile gives none.
func (t *Table) RestartFor(model string, gpus int) (time.Duration, bool) {
	if m := t.Model(model); m != nil {
		if v, ok := m.RestartS.At(gpus); ok {
			return Seconds(v), true
		}
	}
	if t.DefaultRestartS > 0 {
		return Seconds(t.DefaultRestartS), true
	}
	return 0, false
}
