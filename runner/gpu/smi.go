package gpu

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Runner runs a command and returns its standard output. SMI uses it to call nvidia-smi, and
// tests replace it with recorded output.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecRunner runs the command with os/exec; stderr is folded into the error.
func ExecRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// Queries sent to nvidia-smi. Devices are queried once; samples on every tick.
const (
	smiDeviceFields = "index,uuid,name,memory.total,driver_version,compute_mode,mig.mode.current,clocks.max.sm"
	smiSampleFields = "index,clocks.sm,utilization.gpu,memory.used,power.draw"
	smiAppFields    = "gpu_uuid,pid,process_name,used_gpu_memory"
	smiCSVFormat    = "--format=csv,noheader,nounits"
)

// smiThrottleFields are the names the throttle bitmask has had across driver versions, newest
// first.
func smiThrottleFields() []string {
	return []string{"clocks_event_reasons.active", "clocks_throttle_reasons.active"}
}

// SMI samples telemetry by running nvidia-smi: one process per query, so sample at most every
// 500 ms.
type SMI struct {
	path string
	run  Runner
	// throttleField is the working name of the throttle-reason field; "-" when none works and
	// "" before the first sample.
	throttleField string
	uuidIndex     map[string]int
	devices       []DeviceInfo
}

// OpenSMI finds nvidia-smi (path "" searches $PATH) and checks that it lists at least one GPU.
func OpenSMI(ctx context.Context, path string) (*SMI, error) {
	if path == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return nil, fmt.Errorf("gpu: nvidia-smi not found: %w", ErrUnavailable)
		}
		path = p
	}
	s := NewSMI(path, ExecRunner)
	devs, err := s.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("gpu: %v: %w", err, ErrUnavailable)
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("gpu: nvidia-smi lists no GPU: %w", ErrUnavailable)
	}
	return s, nil
}

// NewSMI returns an SMI sampler that runs the nvidia-smi at path through run.
func NewSMI(path string, run Runner) *SMI { return &SMI{path: path, run: run} }

// Name returns "smi".
func (s *SMI) Name() string { return SourceSMI }

// Close does nothing.
func (s *SMI) Close() error { return nil }

// Devices queries the GPUs once and caches the answer.
func (s *SMI) Devices(ctx context.Context) ([]DeviceInfo, error) {
	if s.devices != nil {
		return s.devices, nil
	}
	out, err := s.run(ctx, s.path, "--query-gpu="+smiDeviceFields, smiCSVFormat)
	if err != nil {
		return nil, err
	}
	devs, err := ParseSMIDevices(out)
	if err != nil {
		return nil, err
	}
	// The CUDA version appears only in the banner of the plain output; best effort.
	if banner, err := s.run(ctx, s.path); err == nil {
		if v := ParseSMICUDAVersion(banner); v != "" {
			for i := range devs {
				devs[i].CUDA = v
			}
		}
	}
	s.devices = devs
	s.uuidIndex = make(map[string]int, len(devs))
	for _, d := range devs {
		s.uuidIndex[d.UUID] = d.Index
	}
	return devs, nil
}

// Sample reads clocks, utilisation, memory, power, throttle reasons and compute processes.
func (s *SMI) Sample(ctx context.Context) ([]Sample, error) {
	if _, err := s.Devices(ctx); err != nil {
		return nil, err
	}
	mono := MonotonicNs()
	var out []byte
	var err error
	fields := []string{s.throttleField}
	if s.throttleField == "" {
		fields = append(smiThrottleFields(), "-")
	}
	for _, f := range fields {
		q := smiSampleFields
		if f != "-" {
			q += "," + f
		}
		out, err = s.run(ctx, s.path, "--query-gpu="+q, smiCSVFormat)
		if err == nil {
			s.throttleField = f
			break
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	samples, err := ParseSMISamples(out, s.throttleField != "-")
	if err != nil {
		return nil, err
	}
	apps, err := s.run(ctx, s.path, "--query-compute-apps="+smiAppFields, smiCSVFormat)
	if err != nil {
		return nil, err
	}
	procs, err := ParseSMIApps(apps)
	if err != nil {
		return nil, err
	}
	for i := range samples {
		samples[i].MonoNs = mono
	}
	for _, p := range procs {
		idx, ok := s.uuidIndex[p.GPUUUID]
		if !ok {
			continue
		}
		for i := range samples {
			if samples[i].Index == idx {
				samples[i].ComputeProcs++
				samples[i].Procs = append(samples[i].Procs, Proc{PID: p.PID, Name: p.ProcessName, UsedBytes: p.UsedMemBytes})
				if p.MPSServer() {
					samples[i].MPSProcs++
				}
			}
		}
	}
	return samples, nil
}

// SMIApp is one row of nvidia-smi --query-compute-apps.
type SMIApp struct {
	GPUUUID      string
	PID          int
	ProcessName  string
	UsedMemBytes int64
}

// MPSServer reports whether the process is an MPS server; nvidia-smi lists it among the
// compute applications while MPS clients run.
func (a SMIApp) MPSServer() bool { return strings.Contains(a.ProcessName, "nvidia-cuda-mps-server") }

// readCSV parses nvidia-smi CSV output (noheader, nounits) and checks the column count.
func readCSV(out []byte, cols int) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	var rows [][]string
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi output: %w", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != cols {
			return nil, fmt.Errorf("nvidia-smi output line %d: %d fields, want %d: %q", line, len(rec), cols, strings.Join(rec, ","))
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		rows = append(rows, rec)
	}
}

// na reports whether an nvidia-smi value means "not available".
func na(v string) bool {
	v = strings.ToLower(v)
	return v == "" || strings.HasPrefix(v, "[") || v == "n/a" || v == "not supported"
}

func smiInt(v, field string) (int64, error) {
	if na(v) {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s: %q is not a number", field, v)
		}
		n = int64(math.Round(f))
	}
	return n, nil
}

func smiFloat(v, field string) (float64, error) {
	if na(v) {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: %q is not a number", field, v)
	}
	return f, nil
}

// ParseSMIDevices parses the output of
// nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version,compute_mode,mig.mode.current,clocks.max.sm --format=csv,noheader,nounits.
func ParseSMIDevices(out []byte) ([]DeviceInfo, error) {
	rows, err := readCSV(out, 8)
	if err != nil {
		return nil, err
	}
	devs := make([]DeviceInfo, 0, len(rows))
	for _, r := range rows {
		idx, err := smiInt(r[0], "index")
		if err != nil {
			return nil, err
		}
		memMiB, err := smiInt(r[3], "memory.total")
		if err != nil {
			return nil, err
		}
		maxClock, err := smiInt(r[7], "clocks.max.sm")
		if err != nil {
			return nil, err
		}
		mig := strings.ToLower(r[6])
		if na(mig) {
			mig = ""
		}
		devs = append(devs, DeviceInfo{
			Index: int(idx), UUID: r[1], Name: r[2], MemTotalBytes: memMiB << 20, Driver: r[4],
			ComputeMode: ParseComputeMode(r[5]), MIGMode: mig, SMClockMaxMHz: int(maxClock),
		})
	}
	return devs, nil
}

// ParseSMISamples parses the output of
// nvidia-smi --query-gpu=index,clocks.sm,utilization.gpu,memory.used,power.draw[,clocks_event_reasons.active] --format=csv,noheader,nounits.
// MPSProcs is set to 0; Sample fills it (and ComputeProcs) from the compute-apps query.
func ParseSMISamples(out []byte, withThrottle bool) ([]Sample, error) {
	cols := 5
	if withThrottle {
		cols = 6
	}
	rows, err := readCSV(out, cols)
	if err != nil {
		return nil, err
	}
	samples := make([]Sample, 0, len(rows))
	for _, r := range rows {
		var s Sample
		idx, err := smiInt(r[0], "index")
		if err != nil {
			return nil, err
		}
		clock, err := smiInt(r[1], "clocks.sm")
		if err != nil {
			return nil, err
		}
		util, err := smiInt(r[2], "utilization.gpu")
		if err != nil {
			return nil, err
		}
		memMiB, err := smiInt(r[3], "memory.used")
		if err != nil {
			return nil, err
		}
		powerW, err := smiFloat(r[4], "power.draw")
		if err != nil {
			return nil, err
		}
		s.Index, s.SMClockMHz, s.UtilPct, s.MemUsedBytes = int(idx), int(clock), int(util), memMiB<<20
		s.PowerMW = int64(math.Round(powerW * 1000))
		if withThrottle && !na(r[5]) {
			v := strings.TrimPrefix(strings.ToLower(r[5]), "0x")
			mask, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("clocks_event_reasons.active: %q is not a hex bitmask", r[5])
			}
			s.Throttle = mask
		}
		samples = append(samples, s)
	}
	return samples, nil
}

// ParseSMIApps parses the output of
// nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv,noheader,nounits.
// "No running processes found" style messages parse as no rows.
func ParseSMIApps(out []byte) ([]SMIApp, error) {
	if t := strings.TrimSpace(string(out)); t == "" || strings.HasPrefix(strings.ToLower(t), "no running") {
		return nil, nil
	}
	rows, err := readCSV(out, 4)
	if err != nil {
		return nil, err
	}
	apps := make([]SMIApp, 0, len(rows))
	for _, r := range rows {
		pid, err := smiInt(r[1], "pid")
		if err != nil {
			return nil, err
		}
		mem, err := smiInt(r[3], "used_gpu_memory")
		if err != nil {
			return nil, err
		}
		apps = append(apps, SMIApp{GPUUUID: r[0], PID: int(pid), ProcessName: r[2], UsedMemBytes: mem << 20})
	}
	return apps, nil
}

// ParseSMICUDAVersion extracts "CUDA Version: X.Y" from nvidia-smi's banner; "" if absent.
func ParseSMICUDAVersion(out []byte) string {
	m := regexp.MustCompile(`CUDA Version:\s*([0-9][0-9.]*)`).FindSubmatch(out)
	if m == nil {
		return ""
	}
	return string(m[1])
}
