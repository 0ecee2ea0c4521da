package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	samples := []Sample{
		{SMClockMHz: 1980, UtilPct: 90, PowerMW: 600000, EnergyMJ: 10_000, Throttle: ThrottleGPUIdle, MemUsedBytes: 5, ComputeProcs: 2, MPSProcs: 0},
		{SMClockMHz: 1755, UtilPct: 100, PowerMW: 700000, EnergyMJ: 12_500, Throttle: ThrottleSWPowerCap, MemUsedBytes: 9, ComputeProcs: 2, MPSProcs: 0},
		{SMClockMHz: 1980, UtilPct: 80, PowerMW: 650000, EnergyMJ: 13_000, Throttle: ThrottleHWThermal, MemUsedBytes: 7, ComputeProcs: 1, MPSProcs: 0},
	}
	got := Summarize("nvml", samples)
	want := Summary{
		Source: "nvml", Samples: 3, SMClockMinMHz: 1755, SMClockMedianMHz: 1980, ThrottleMask: ThrottleSWPowerCap | ThrottleHWThermal,
		Throttle: []string{"sw_power_cap", "hw_thermal_slowdown"}, UtilMeanPct: 90, PowerMeanW: 650, EnergyJ: 3,
		MemUsedMaxBytes: 9, ComputeProcsMax: 2, MPSProcsMax: 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
	if s := Summarize("none", nil); s.Samples != 0 || s.MPSProcsMax != -1 {
		t.Errorf("empty summary %+v", s)
	}
}

func TestThrottleNames(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"gpu_idle", "hw_slowdown", "0x10000"}, ThrottleNames(ThrottleGPUIdle|ThrottleHWSlowdown|0x10000)); diff != "" {
		t.Error(diff)
	}
}

func TestRecordFake(t *testing.T) {
	t.Parallel()
	f := NewFake(2)
	f.Throttle = ThrottleSWPowerCap
	ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
	defer cancel()
	var buf bytes.Buffer
	before := MonotonicNs()
	sum := Record(ctx, f, 100*time.Millisecond, []int{1}, &buf)
	if sum.Samples < 2 || sum.Source != "fake" || sum.SMClockMedianMHz != 1980 || len(sum.Throttle) != 1 || sum.EnergyJ <= 0 {
		t.Errorf("summary %+v", sum)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != sum.Samples {
		t.Fatalf("%d lines for %d samples", len(lines), sum.Samples)
	}
	var s Sample
	if err := json.Unmarshal([]byte(lines[0]), &s); err != nil || s.Index != 1 || s.MonoNs < before || s.MonoNs > MonotonicNs() {
		t.Errorf("first sample %+v (%v): want device 1 stamped on CLOCK_MONOTONIC", s, err)
	}
}

func TestMonotonicNs(t *testing.T) {
	t.Parallel()
	a := MonotonicNs()
	time.Sleep(2 * time.Millisecond)
	if b := MonotonicNs(); b-a < int64(time.Millisecond) || a <= 0 {
		t.Errorf("MonotonicNs went from %d to %d", a, b)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"none", "fake", "auto"} {
		s, err := Open(context.Background(), src)
		if err != nil {
			t.Fatalf("Open(%q): %v", src, err)
		}
		if src != "auto" && s.Name() != src {
			t.Errorf("Open(%q).Name() = %q", src, s.Name())
		}
		s.Close()
	}
	if _, err := Open(context.Background(), "dcgm"); err == nil {
		t.Error("unknown source accepted")
	}
}

func TestDetectMPS(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	mk := func(pid, cmdline, comm string) {
		d := filepath.Join(proc, pid)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644)
		os.WriteFile(filepath.Join(d, "comm"), []byte(comm+"\n"), 0o644)
	}
	mk("1", "/sbin/init\x00", "init")
	mk("77", "python3\x00train.py\x00", "python3")
	os.MkdirAll(filepath.Join(proc, "self"), 0o755)
	if st := DetectMPS(proc, filepath.Join(t.TempDir(), "nvidia-mps")); st.Detected {
		t.Errorf("no MPS, detected: %+v", st)
	}
	mk("4242", "/usr/bin/nvidia-cuda-mps-control\x00-d\x00", "nvidia-cuda-mps")
	mk("4243", "", "nvidia-cuda-mps") // kernel thread style: no cmdline, comm truncated to 15 bytes
	pipes := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(pipes, "control"), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	st := DetectMPS(proc, pipes)
	want := []string{"control pipe " + filepath.Join(pipes, "control"), "process nvidia-cuda-mps (pid 4243)", "process nvidia-cuda-mps-control (pid 4242)"}
	if !st.Detected || !cmp.Equal(want, st.Evidence) {
		t.Errorf("DetectMPS = %+v, want evidence %v", st, want)
	}
}

func TestNVMLUnavailableWithoutDriver(t *testing.T) {
	t.Parallel()
	// Here (no driver, or a build without cgo) NVML must fail cleanly, never crash.
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("an NVIDIA driver is present")
	}
	s, err := OpenNVML()
	if err == nil {
		s.Close()
		t.Fatal("OpenNVML succeeded without a driver")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}
