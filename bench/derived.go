package bench

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"path"
	"slices"
	"strconv"

	"github.com/sharebench/sharebench/profile"
)

// MaxAccum is the largest number of micro-steps per optimizer step DeriveSubBatches adds
// (Pollux's default, profile.PolluxOptions).
const MaxAccum = 8

// copyTable returns a deep copy of t through its canonical JSON form. It only reads t, so
// other goroutines may use t meanwhile.
func copyTable(t *profile.Table, name string) (*profile.Table, error) {
	var data bytes.Buffer
	if err := t.Write(&data); err != nil {
		return nil, fmt.Errorf("bench: profile %s: %w", name, err)
	}
	c, err := profile.Load(&data, name)
	if err != nil {
		return nil, fmt.Errorf("bench: profile %s: %w", name, err)
	}
	return c, nil
}

// DeriveSubBatches returns a copy of a profile that has pairs but no gradient accumulation
// (sub_batch = batch everywhere, like Gavel's) with accumulation configurations added, so that
// the sub-batch choice of SJF-BSBF has something to choose from. No number is invented; each
// comes from the base profile through a stated model:
//
//   - Configurations. For every model and every two measured batches b < B of it with
//     B = k·b, k a power of two ≤ MaxAccum, the configuration (batch B, sub-batch b) is added:
//     k micro-steps of b samples per optimizer step.
//   - Step time (Pollux's accumulation model, docs/paper.md §6): the compute part of a step repeats
//     per micro-step and gradients synchronise once, step_g(B, b) = t_g(b) + (k−1)·c(b), where
//     t_g(b) is the measured step time of batch b on g GPUs and c(b) = min(t_1(b), t_g(b)) its
//     compute part: the base has no synchronisation times, and one GPU does not synchronise.
//     It is raised to t_g(B) where it would be lower: k micro-steps of b samples do at least
//     the work of one step of B samples, so they cannot be faster.
//   - Memory: that of the micro-batch, i.e. of configuration (b, b) (the profiles' memory
//     estimate depends on the sub-batch only); it stays marked as an estimate where it was one.
//   - Slowdowns: a job accumulating micro-batches of b samples runs the kernels of a job of
//     batch b, so ξ((Ba, ba) | (Bc, bc)) = ξ((ba, ba) | (bc, bc)) of the base, for every GPU
//     count and mode the base has; pairs the base lacks stay absent (not shareable). The
//     optimizer update, once per step, is neglected.
//
// The result is labelled source "derived" with the base's provenance, and its notes state the
// derivation. name is the base profile's input name, for the notes.
func DeriveSubBatches(base *profile.Table, name string) (*profile.Table, error) {
	t, err := copyTable(base, name)
	if err != nil {
		return nil, err
	}
	type key struct {
		model        string
		batch, micro int
	}
	added, clamped := 0, 0
	origin := map[profile.Config]profile.Config{} // every config → the (b, b) config whose kernels it runs
	for mi := range t.Models {
		m := &t.Models[mi]
		plain := map[int]profile.Solo{}
		for _, s := range m.Configs {
			c := profile.Config{Model: m.Name, Batch: s.Batch, SubBatch: s.SubBatch}
			if s.SubBatch == s.Batch {
				plain[s.Batch] = s
				origin[c] = c
			}
		}
		have := map[key]bool{}
		for _, s := range m.Configs {
			have[key{m.Name, s.Batch, s.SubBatch}] = true
		}
		var extra []profile.Solo
		for _, bigB := range sortedKeys(plain) {
			for _, b := range sortedKeys(plain) {
				if b >= bigB || bigB%b != 0 {
					continue
				}
				k := bigB / b
				if k > MaxAccum || bits.OnesCount(uint(k)) != 1 || have[key{m.Name, bigB, b}] {
					continue
				}
				micro := plain[b]
				t1, ok := micro.IterS[1]
				if !ok {
					continue
				}
				iter := profile.GPUMap{}
				for g, tg := range micro.IterS {
					c := math.Min(t1, tg)
					step := round9(tg + float64(k-1)*c)
					// k micro-steps never beat one step at the full batch on as many GPUs.
					if full, ok := plain[bigB].IterS.At(g); ok && step < full {
						step, clamped = full, clamped+1
					}
					iter[g] = step
				}
				extra = append(extra, profile.Solo{Batch: bigB, SubBatch: b, IterS: iter,
					MemBytes: micro.MemBytes, MemEstimated: micro.MemEstimated})
				origin[profile.Config{Model: m.Name, Batch: bigB, SubBatch: b}] = profile.Config{Model: m.Name, Batch: b, SubBatch: b}
				added++
			}
		}
		m.Configs = append(m.Configs, extra...)
	}
	// Pairs: index the base's pairs by their plain configurations, then give every ordered
	// pair of configurations (at least one of them derived) the slowdown of its micro-batches.
	type pk struct {
		a, b profile.Config
	}
	basePairs := map[pk][]profile.Pair{}
	for _, p := range base.Pairs {
		if p.A.Batch == p.A.SubBatch && p.B.Batch == p.B.SubBatch {
			basePairs[pk{p.A, p.B}] = append(basePairs[pk{p.A, p.B}], p)
		}
	}
	var configs []profile.Config
	for _, m := range t.Models {
		for _, s := range m.Configs {
			c := profile.Config{Model: m.Name, Batch: s.Batch, SubBatch: s.SubBatch}
			if _, ok := origin[c]; ok {
				configs = append(configs, c)
			}
		}
	}
	newPairs := 0
	for _, a := range configs {
		for _, c := range configs {
			if a.Batch == a.SubBatch && c.Batch == c.SubBatch {
				continue // measured: already in the base
			}
			for _, p := range basePairs[pk{origin[a], origin[c]}] {
				q := p
				q.A, q.B = a, c
				t.Pairs = append(t.Pairs, q)
				newPairs++
			}
		}
	}
	t.Source = "derived"
	t.Provenance.Command = "bench.DeriveSubBatches(" + path.Base(name) + ")"
	t.Notes = append(t.Notes,
		fmt.Sprintf("DERIVED from %s by bench.DeriveSubBatches: %d gradient-accumulation configurations (batch k·b, sub-batch b; k = 2, 4, 8) and %d pairs added; REPRODUCE.md states the derivation", path.Base(name), added, newPairs),
		"derived step time (Pollux's accumulation model): step_g(k·b, b) = t_g(b) + (k−1)·min(t_1(b), t_g(b)), and never below the measured t_g(k·b) of one full-batch step; derived memory = that of the micro-batch b; derived ξ = the measured ξ of the two micro-batches (the optimizer update is neglected)",
		fmt.Sprintf("%d derived step times were raised to the full batch's measured step time", clamped),
	)
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("bench: derived profile from %s: %w", name, err)
	}
	return t, nil
}

// ScaleXi returns a copy of a profile whose slowdowns are scaled by s ≥ 0:
// ξ' = 1 + (max(ξ, 1) − 1)·s. The excess slowdown is what scales, so ξ' ≥ 1 for every s and
// s = 1 is the identity up to measured values below 1, which the simulator raises to 1 anyway.
// (Scaling ξ itself, ξ·s, would turn many pairs into speed-ups for s < 1.) Confidence intervals
// are dropped, since they described the unscaled measurements.
func ScaleXi(base *profile.Table, s float64) (*profile.Table, error) {
	if !(s >= 0) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("bench: ξ scale %v is not a finite number ≥ 0", s)
	}
	t, err := copyTable(base, "scaled profile")
	if err != nil {
		return nil, err
	}
	for i := range t.Pairs {
		p := &t.Pairs[i]
		p.Xi = round9(1 + (math.Max(p.Xi, 1)-1)*s)
		p.CI = nil
	}
	t.Source = base.Source + ", ξ scaled ×" + strconv.FormatFloat(s, 'f', -1, 64)
	t.Notes = append(t.Notes, "SCALED by bench.ScaleXi: every ξ replaced by 1 + (max(ξ,1) − 1)·"+strconv.FormatFloat(s, 'f', -1, 64)+" (sensitivity analysis; not a measurement); confidence intervals dropped")
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("bench: ξ-scaled profile: %w", err)
	}
	return t, nil
}

// SymmetricXi returns a copy of a profile in which both directions of every pair have the
// same slowdown, the mean of the two measured ones: ξ'(a|b) = ξ'(b|a) = (ξ(a|b) + ξ(b|a)) / 2,
// per GPU count and mode. A pair measured in one direction only keeps its value. It tests how
// much of a policy's behaviour comes from the asymmetry of the measured interference.
func SymmetricXi(base *profile.Table) (*profile.Table, error) {
	t, err := copyTable(base, "symmetric profile")
	if err != nil {
		return nil, err
	}
	type key struct {
		a, b profile.Config
		gpus int
		mode profile.Mode
	}
	xi := map[key]float64{}
	for _, p := range base.Pairs {
		xi[key{p.A, p.B, p.GPUs, p.Mode}] = p.Xi
	}
	for i := range t.Pairs {
		p := &t.Pairs[i]
		if back, ok := xi[key{p.B, p.A, p.GPUs, p.Mode}]; ok {
			p.Xi = round9((p.Xi + back) / 2)
		}
		p.CI = nil
	}
	t.Source = base.Source + ", ξ symmetric"
	t.Notes = append(t.Notes, "SYMMETRIC by bench.SymmetricXi: both directions of every pair set to the mean of the two measured slowdowns (sensitivity analysis; not a measurement); confidence intervals dropped")
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("bench: symmetric profile: %w", err)
	}
	return t, nil
}

// round9 rounds to 1e-9, so derived numbers print without binary noise.
func round9(x float64) float64 { return math.Round(x*1e9) / 1e9 }

func sortedKeys(m map[int]profile.Solo) []int { return slices.Sorted(maps.Keys(m)) }
