package gpu

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// ErrUnavailable reports that a telemetry source cannot be used on this host (no driver, no
// nvidia-smi, or a build without cgo for NVML).
var ErrUnavailable = errors.New("gpu telemetry unavailable")

// Telemetry source names, as accepted by Open and recorded in manifests.
const (
	SourceAuto = "auto" // NVML, then nvidia-smi, then none
	SourceNVML = "nvml"
	SourceSMI  = "smi"
	SourceNone = "none"
	SourceFake = "fake"
)

// DeviceInfo identifies one GPU and its (read-only) configuration.
type DeviceInfo struct {
	Index         int    `json:"index"`
	UUID          string `json:"uuid,omitempty"`
	Name          string `json:"name,omitempty"`
	MemTotalBytes int64  `json:"mem_total_bytes,omitempty"`
	Driver        string `json:"driver,omitempty"`
	// CUDA is the CUDA version the driver supports, e.g. "12.8".
	CUDA string `json:"cuda,omitempty"`
	// ComputeMode is "default", "exclusive_process", "prohibited" or "" when unknown.
	ComputeMode string `json:"compute_mode,omitempty"`
	// MIGMode is "enabled", "disabled" or "" when unknown or unsupported.
	MIGMode       string `json:"mig_mode,omitempty"`
	SMClockMaxMHz int    `json:"sm_clock_max_mhz,omitempty"`
}

// Sample is one reading of one device. Zero means "not reported" for every field but Index and
// MonoNs; MPSProcs is -1 when the source cannot tell.
type Sample struct {
	// MonoNs is the CLOCK_MONOTONIC time of the reading in nanoseconds.
	MonoNs       int64 `json:"mono_ns"`
	Index        int   `json:"index"`
	SMClockMHz   int   `json:"sm_clock_mhz,omitempty"`
	UtilPct      int   `json:"util_pct,omitempty"`
	MemUsedBytes int64 `json:"mem_used_bytes,omitempty"`
	PowerMW      int64 `json:"power_mw,omitempty"`
	// EnergyMJ is the energy counter in millijoules since driver load (NVML only); use deltas.
	EnergyMJ int64 `json:"energy_mj,omitempty"`
	// Throttle is the clocks-event (throttle) reason bitmask as NVML defines it.
	Throttle     uint64 `json:"throttle,omitempty"`
	ComputeProcs int    `json:"compute_procs"`
	MPSProcs     int    `json:"mps_procs"`
	// Procs are the compute processes on the device (the runner checks for foreign ones
	// before a cell).
	Procs []Proc `json:"procs,omitempty"`
}

// Proc is a compute process on a GPU. PIDs are the host's (inside a container they differ).
type Proc struct {
	PID int `json:"pid"`
	// Name is the process name where the source reports it (nvidia-smi), else "".
	Name      string `json:"name,omitempty"`
	UsedBytes int64  `json:"used_bytes,omitempty"`
}

// A Sampler reads telemetry. Implementations: NVML (cgo), nvidia-smi, none and fake.
// A Sampler is not safe for concurrent use unless its documentation says so.
type Sampler interface {
	// Name is the source name: "nvml", "smi", "none" or "fake".
	Name() string
	// Devices lists the visible GPUs.
	Devices(ctx context.Context) ([]DeviceInfo, error)
	// Sample reads every visible GPU once.
	Sample(ctx context.Context) ([]Sample, error)
	// Close releases the source.
	Close() error
}

// Open returns the sampler for a source name (SourceAuto tries NVML, then nvidia-smi, then
// falls back to none). Requesting an unavailable source returns an error wrapping
// ErrUnavailable.
func Open(ctx context.Context, source string) (Sampler, error) {
	switch source {
	case SourceAuto, "":
		if s, err := OpenNVML(); err == nil {
			return s, nil
		}
		if s, err := OpenSMI(ctx, ""); err == nil {
			return s, nil
		}
		return None{}, nil
	case SourceNVML:
		return OpenNVML()
	case SourceSMI:
		return OpenSMI(ctx, "")
	case SourceNone:
		return None{}, nil
	case SourceFake:
		return NewFake(1), nil
	}
	return nil, fmt.Errorf("gpu: unknown telemetry source %q (known: auto, nvml, smi, none, fake)", source)
}

// None is the sampler of last resort: no devices, no samples.
type None struct{}

// Name returns "none".
func (None) Name() string { return SourceNone }

// Devices returns no devices.
func (None) Devices(context.Context) ([]DeviceInfo, error) { return nil, nil }

// Sample returns no samples.
func (None) Sample(context.Context) ([]Sample, error) { return nil, nil }

// Close does nothing.
func (None) Close() error { return nil }

// Throttle reason bits (NVML clocks-event reasons).
const (
	ThrottleGPUIdle          uint64 = 0x1
	ThrottleAppClocksSetting uint64 = 0x2
	ThrottleSWPowerCap       uint64 = 0x4
	ThrottleHWSlowdown       uint64 = 0x8
	ThrottleSyncBoost        uint64 = 0x10
	ThrottleSWThermal        uint64 = 0x20
	ThrottleHWThermal        uint64 = 0x40
	ThrottleHWPowerBrake     uint64 = 0x80
	ThrottleDisplayClocks    uint64 = 0x100
)

// ThrottleBenign are reasons that do not indicate capped performance (idle GPU, application
// clock setting).
const ThrottleBenign = ThrottleGPUIdle | ThrottleAppClocksSetting

// ThrottleNames returns the names of the bits set in mask, in bit order; unknown bits are
// named by their hex value.
func ThrottleNames(mask uint64) []string {
	var out []string
	for mask != 0 {
		b := bits.TrailingZeros64(mask)
		mask &^= 1 << b
		out = append(out, throttleName(b))
	}
	return out
}

// ParseComputeMode normalises nvidia-smi's and NVML's compute-mode names to "default",
// "exclusive_thread", "prohibited" or "exclusive_process".
func ParseComputeMode(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.ReplaceAll(s, " ", "_")
	switch s {
	case "default", "0":
		return "default"
	case "exclusive_thread", "1":
		return "exclusive_thread"
	case "prohibited", "2":
		return "prohibited"
	case "exclusive_process", "3":
		return "exclusive_process"
	case "", "[n/a]", "n/a", "[not_supported]":
		return ""
	}
	return s
}

// throttleName names throttle-reason bit b.
func throttleName(b int) string {
	switch uint64(1) << b {
	case ThrottleGPUIdle:
		return "gpu_idle"
	case ThrottleAppClocksSetting:
		return "applications_clocks_setting"
	case ThrottleSWPowerCap:
		return "sw_power_cap"
	case ThrottleHWSlowdown:
		return "hw_slowdown"
	case ThrottleSyncBoost:
		return "sync_boost"
	case ThrottleSWThermal:
		return "sw_thermal_slowdown"
	case ThrottleHWThermal:
		return "hw_thermal_slowdown"
	case ThrottleHWPowerBrake:
		return "hw_power_brake_slowdown"
	case ThrottleDisplayClocks:
		return "display_clock_setting"
	}
	return fmt.Sprintf("0x%x", uint64(1)<<b)
}
