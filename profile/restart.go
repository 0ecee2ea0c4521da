package profile

import "time"

// lineageRestartS is the per-model, per-GPU-count (re)start overhead in seconds of the Muri
// simulator (Rivendile/Muri, simulator/run_sim.py overhead_dict, Apache-2.0), measured by Muri's
// authors for the eight models their and the SJF-BSBF authors' traces use, on the GPU counts of
// lineageCounts.
var lineageRestartS = map[string][len(lineageCounts)]float64{
	"vgg16":              {7, 7, 8, 9, 9, 10},
	"vgg19":              {7, 7, 8, 9, 10, 10},
	"resnet18":           {4, 5, 5, 7, 7, 7},
	"shufflenet_v2_x1_0": {4, 4, 5, 5, 7, 8},
	"bert":               {10, 10, 10, 10, 10, 10},
	"gpt2":               {10, 10, 10, 10, 10, 10},
	"a2c":                {38, 39, 39, 46, 46, 46},
	"dqn":                {5, 5, 6, 6, 8, 8},
}

// lineageCounts are the GPU counts of lineageRestartS, ascending.
var lineageCounts = [...]int{1, 2, 4, 8, 16, 32}

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
	v := byGPUs[0] // below the smallest count, the smallest's
	for k, g := range lineageCounts {
		if g <= gpus {
			v = byGPUs[k]
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
