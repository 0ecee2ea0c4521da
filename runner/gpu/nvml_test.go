//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

func TestNVMLInitFailureTouchesNothingElse(t *testing.T) {
	t.Parallel()
	// Every method but Init is nil: calling one panics ("method is nil"), standing in for the
	// dynamic loader killing the process after a failed Init.
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	_, err := openNVML(lib)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := len(lib.InitCalls()); n != 1 {
		t.Errorf("Init called %d times", n)
	}
}

func TestNVMLRealLibraryMissing(t *testing.T) {
	t.Parallel()
	// The real binding with a library path that does not exist: dlopen fails, Init returns
	// an error, and the process survives because nothing else is called.
	lib := nvml.New(nvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1")))
	if _, err := openNVML(lib); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestNVMLMockDevice(t *testing.T) {
	t.Parallel()
	dev := &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return "NVIDIA H200", nvml.SUCCESS },
		GetUUIDFunc: func() (string, nvml.Return) { return "GPU-0000", nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 150754820096, Used: 1 << 30}, nvml.SUCCESS
		},
		GetComputeModeFunc: func() (nvml.ComputeMode, nvml.Return) {
			return nvml.COMPUTEMODE_EXCLUSIVE_PROCESS, nvml.SUCCESS
		},
		GetMigModeFunc:      func() (int, int, nvml.Return) { return 0, 0, nvml.SUCCESS },
		GetMaxClockInfoFunc: func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS },
		GetClockInfoFunc:    func(nvml.ClockType) (uint32, nvml.Return) { return 1755, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 99}, nvml.SUCCESS
		},
		GetPowerUsageFunc:                 func() (uint32, nvml.Return) { return 650000, nvml.SUCCESS },
		GetTotalEnergyConsumptionFunc:     func() (uint64, nvml.Return) { return 123456, nvml.SUCCESS },
		GetCurrentClocksEventReasonsFunc:  func() (uint64, nvml.Return) { return uint64(ThrottleSWPowerCap), nvml.SUCCESS },
		GetComputeRunningProcessesFunc:    func() ([]nvml.ProcessInfo, nvml.Return) { return make([]nvml.ProcessInfo, 2), nvml.SUCCESS },
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
	}
	lib := &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc:     func(int) (nvml.Device, nvml.Return) { return dev, nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "570.124.06", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12080, nvml.SUCCESS },
	}
	n, err := openNVML(lib)
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := n.Devices(context.Background())
	want := DeviceInfo{Index: 0, UUID: "GPU-0000", Name: "NVIDIA H200", MemTotalBytes: 150754820096, Driver: "570.124.06",
		CUDA: "12.8", ComputeMode: "exclusive_process", MIGMode: "disabled", SMClockMaxMHz: 1980}
	if len(devs) != 1 || devs[0] != want {
		t.Errorf("devices %+v, want %+v", devs, want)
	}
	samples, err := n.Sample(context.Background())
	if err != nil || len(samples) != 1 {
		t.Fatalf("samples %v, %v", samples, err)
	}
	s := samples[0]
	if s.SMClockMHz != 1755 || s.UtilPct != 99 || s.PowerMW != 650000 || s.EnergyMJ != 123456 || s.Throttle != ThrottleSWPowerCap ||
		s.ComputeProcs != 2 || s.MPSProcs != -1 || s.MemUsedBytes != 1<<30 {
		t.Errorf("sample %+v", s)
	}
	if err := n.Close(); err != nil || len(lib.ShutdownCalls()) != 1 {
		t.Errorf("close: %v, %d shutdowns", err, len(lib.ShutdownCalls()))
	}
	if err := n.Close(); err != nil || len(lib.ShutdownCalls()) != 1 {
		t.Error("second Close called Shutdown again")
	}
}
