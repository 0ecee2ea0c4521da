package gpu

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"time"
)

// Summary condenses the samples of one run's measurement window.
type Summary struct {
	Source  string `json:"source"`
	Samples int    `json:"samples"`
	Errors  int    `json:"errors,omitempty"`
	// SMClockMinMHz and SMClockMedianMHz summarise the SM clock over the samples.
	SMClockMinMHz    int `json:"sm_clock_min_mhz,omitempty"`
	SMClockMedianMHz int `json:"sm_clock_median_mhz,omitempty"`
	// ThrottleMask ORs the non-benign throttle reasons seen; Throttle names them.
	ThrottleMask    uint64   `json:"throttle_mask,omitempty"`
	Throttle        []string `json:"throttle,omitempty"`
	UtilMeanPct     float64  `json:"util_mean_pct,omitempty"`
	PowerMeanW      float64  `json:"power_mean_w,omitempty"`
	EnergyJ         float64  `json:"energy_j,omitempty"`
	MemUsedMaxBytes int64    `json:"mem_used_max_bytes,omitempty"`
	ComputeProcsMax int      `json:"compute_procs_max,omitempty"`
	// MPSProcsMax is the most MPS processes seen in one sample; -1 when the source cannot tell.
	MPSProcsMax int `json:"mps_procs_max"`
}

// Summarize condenses samples (of one device or several) into a Summary.
func Summarize(source string, samples []Sample) Summary {
	s := Summary{Source: source, Samples: len(samples), MPSProcsMax: -1}
	if len(samples) == 0 {
		return s
	}
	var clocks []int
	var util, power float64
	var nPower int
	minE, maxE := int64(-1), int64(-1)
	for _, x := range samples {
		if x.SMClockMHz > 0 {
			clocks = append(clocks, x.SMClockMHz)
		}
		util += float64(x.UtilPct)
		if x.PowerMW > 0 {
			power += float64(x.PowerMW) / 1000
			nPower++
		}
		if x.EnergyMJ > 0 {
			if minE < 0 || x.EnergyMJ < minE {
				minE = x.EnergyMJ
			}
			maxE = max(maxE, x.EnergyMJ)
		}
		s.ThrottleMask |= x.Throttle &^ ThrottleBenign
		s.MemUsedMaxBytes = max(s.MemUsedMaxBytes, x.MemUsedBytes)
		s.ComputeProcsMax = max(s.ComputeProcsMax, x.ComputeProcs)
		s.MPSProcsMax = max(s.MPSProcsMax, x.MPSProcs)
	}
	if len(clocks) > 0 {
		slices.Sort(clocks)
		s.SMClockMinMHz = clocks[0]
		s.SMClockMedianMHz = clocks[(len(clocks)-1)/2]
	}
	s.UtilMeanPct = util / float64(len(samples))
	if nPower > 0 {
		s.PowerMeanW = power / float64(nPower)
	}
	if maxE > minE && minE >= 0 {
		s.EnergyJ = float64(maxE-minE) / 1000
	}
	s.Throttle = ThrottleNames(s.ThrottleMask)
	return s
}

// MinInterval is the shortest sampling interval the source supports well: 200 ms for NVML,
// 500 ms for nvidia-smi (one process per sample), 100 ms otherwise.
func MinInterval(source string) time.Duration {
	switch source {
	case SourceNVML:
		return 200 * time.Millisecond
	case SourceSMI:
		return 500 * time.Millisecond
	}
	return 100 * time.Millisecond
}

// Record samples s every interval (at least MinInterval) until ctx is done, writing each
// sample of the selected devices (all when devices is nil) as one JSON line to w, and returns
// their Summary. Sampling errors are counted, not returned: telemetry is optional context.
func Record(ctx context.Context, s Sampler, interval time.Duration, devices []int, w io.Writer) Summary {
	interval = max(interval, MinInterval(s.Name()))
	enc := json.NewEncoder(w)
	var all []Sample
	errs := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		samples, err := s.Sample(ctx)
		if err != nil && ctx.Err() == nil {
			errs++
		}
		for _, x := range samples {
			if devices != nil && !slices.Contains(devices, x.Index) {
				continue
			}
			all = append(all, x)
			if w != nil {
				if err := enc.Encode(x); err != nil {
					errs++
				}
			}
		}
		select {
		case <-ctx.Done():
			sum := Summarize(s.Name(), all)
			sum.Errors = errs
			return sum
		case <-tick.C:
		}
	}
}
