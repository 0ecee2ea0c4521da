package gpu

import (
	"context"
	"fmt"
)

// Fake is a deterministic sampler for tests: n devices named "Fake GPU" with 80 GiB each,
// constant clocks and an energy counter that grows by one joule per sample. Only the MonoNs
// stamps come from the real clock.
type Fake struct {
	n     int
	calls int64
	// Throttle is reported in every sample; tests set it to exercise throttle flags.
	Throttle uint64
	// MPSProcs is reported in every sample.
	MPSProcs int
	// Procs, when set, are the compute processes of every device (tests of the foreign-process
	// check); ComputeProcs is then their number.
	Procs []Proc
}

// NewFake returns a fake sampler with n devices.
func NewFake(n int) *Fake { return &Fake{n: n} }

// Name returns "fake".
func (f *Fake) Name() string { return SourceFake }

// Devices lists the fake GPUs.
func (f *Fake) Devices(context.Context) ([]DeviceInfo, error) {
	out := make([]DeviceInfo, f.n)
	for i := range out {
		out[i] = DeviceInfo{
			Index: i, UUID: fmt.Sprintf("GPU-fake-%04d", i), Name: "Fake GPU", MemTotalBytes: 80 << 30,
			Driver: "0.0", CUDA: "0.0", ComputeMode: "default", MIGMode: "disabled", SMClockMaxMHz: 2000,
		}
	}
	return out, nil
}

// Sample returns one reading per fake device.
func (f *Fake) Sample(context.Context) ([]Sample, error) {
	f.calls++
	mono := MonotonicNs()
	out := make([]Sample, f.n)
	for i := range out {
		out[i] = Sample{
			MonoNs: mono, Index: i, SMClockMHz: 1980, UtilPct: 90, MemUsedBytes: 1 << 30, PowerMW: 300000,
			EnergyMJ: f.calls * 1000, Throttle: f.Throttle, ComputeProcs: 1, MPSProcs: f.MPSProcs,
		}
		if f.Procs != nil {
			out[i].Procs, out[i].ComputeProcs = f.Procs, len(f.Procs)
		}
	}
	return out, nil
}

// Close does nothing.
func (f *Fake) Close() error { return nil }
