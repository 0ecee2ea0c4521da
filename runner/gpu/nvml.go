//go:build linux && cgo

package gpu

import (
	"context"
	"fmt"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML samples telemetry through the NVIDIA Management Library. It is the only type in the
// repository that touches go-nvml. Build it with OpenNVML; once Init has failed the library is
// never called again (any further call can kill the process).
type NVML struct {
	lib    nvml.Interface
	devs   []nvml.Device
	infos  []DeviceInfo
	closed bool
}

// OpenNVML loads libnvidia-ml.so.1 and enumerates the GPUs. It returns an error wrapping
// ErrUnavailable when the library cannot be loaded or initialised.
func OpenNVML() (Sampler, error) {
	n, err := openNVML(nvml.New())
	if err != nil {
		return nil, err
	}
	return n, nil
}

// openNVML initialises lib. If Init fails nothing else is called on lib: not even Shutdown,
// not even Return.Error, which could resolve symbols of a library that was never loaded.
func openNVML(lib nvml.Interface) (*NVML, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("gpu: nvml init failed (return code %d): %w", int32(ret), ErrUnavailable)
	}
	n := &NVML{lib: lib}
	if err := n.enumerate(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// retErr turns a failed NVML return into an error. It is only used after a successful Init.
func retErr(what string, ret nvml.Return) error {
	return fmt.Errorf("gpu: nvml %s: %s", what, ret.Error())
}

func (n *NVML) enumerate() error {
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return retErr("device count", ret)
	}
	driver, ret := n.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		driver = ""
	}
	cuda := ""
	if v, ret := n.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		cuda = strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
	}
	for i := 0; i < count; i++ {
		d, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return retErr(fmt.Sprintf("device %d handle", i), ret)
		}
		info := DeviceInfo{Index: i, Driver: driver, CUDA: cuda}
		if v, ret := d.GetName(); ret == nvml.SUCCESS {
			info.Name = v
		}
		if v, ret := d.GetUUID(); ret == nvml.SUCCESS {
			info.UUID = v
		}
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			info.MemTotalBytes = int64(m.Total)
		}
		if v, ret := d.GetComputeMode(); ret == nvml.SUCCESS {
			info.ComputeMode = ParseComputeMode(strconv.Itoa(int(v)))
		}
		if cur, _, ret := d.GetMigMode(); ret == nvml.SUCCESS {
			info.MIGMode = "disabled"
			if cur == nvml.DEVICE_MIG_ENABLE {
				info.MIGMode = "enabled"
			}
		}
		if v, ret := d.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
			info.SMClockMaxMHz = int(v)
		}
		n.devs = append(n.devs, d)
		n.infos = append(n.infos, info)
	}
	return nil
}

// Name returns "nvml".
func (n *NVML) Name() string { return SourceNVML }

// Devices returns the GPUs found at open.
func (n *NVML) Devices(context.Context) ([]DeviceInfo, error) { return n.infos, nil }

// Sample reads every device once. Unsupported readings stay zero.
func (n *NVML) Sample(context.Context) ([]Sample, error) {
	if n.closed {
		return nil, fmt.Errorf("gpu: nvml: sampler closed")
	}
	mono := MonotonicNs()
	out := make([]Sample, 0, len(n.devs))
	for i, d := range n.devs {
		s := Sample{MonoNs: mono, Index: i, MPSProcs: -1}
		if v, ret := d.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
			s.SMClockMHz = int(v)
		}
		if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
			s.UtilPct = int(u.Gpu)
		}
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			s.MemUsedBytes = int64(m.Used)
		}
		if v, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
			s.PowerMW = int64(v)
		}
		if v, ret := d.GetTotalEnergyConsumption(); ret == nvml.SUCCESS {
			s.EnergyMJ = int64(v)
		}
		if v, ret := d.GetCurrentClocksEventReasons(); ret == nvml.SUCCESS {
			s.Throttle = v
		}
		if p, ret := d.GetComputeRunningProcesses(); ret == nvml.SUCCESS {
			s.ComputeProcs = len(p)
			for _, pi := range p {
				s.Procs = append(s.Procs, Proc{PID: int(pi.Pid), UsedBytes: int64(pi.UsedGpuMemory)})
			}
		}
		if p, ret := d.GetMPSComputeRunningProcesses(); ret == nvml.SUCCESS {
			s.MPSProcs = len(p)
		}
		out = append(out, s)
	}
	return out, nil
}

// Close shuts NVML down; it is safe to call more than once.
func (n *NVML) Close() error {
	if n.closed {
		return nil
	}
	n.closed = true
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return retErr("shutdown", ret)
	}
	return nil
}
