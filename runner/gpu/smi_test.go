package gpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSMIDevices(t *testing.T) {
	t.Parallel()
	got, err := ParseSMIDevices(fixture(t, "smi-devices-mixed.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := []DeviceInfo{
		{Index: 0, UUID: "GPU-aaaaaaaa-0000-0000-0000-000000000000", Name: "NVIDIA H100 80GB HBM3", MemTotalBytes: 81559 << 20,
			Driver: "550.90.12", ComputeMode: "exclusive_process", MIGMode: "enabled", SMClockMaxMHz: 1980},
		{Index: 1, UUID: "GPU-bbbbbbbb-0000-0000-0000-000000000000", Name: "NVIDIA A100-SXM4-40GB", MemTotalBytes: 40960 << 20,
			Driver: "550.90.12", ComputeMode: "default", SMClockMaxMHz: 1410},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}

func TestParseSMISamples(t *testing.T) {
	t.Parallel()
	got, err := ParseSMISamples(fixture(t, "smi-samples-na.csv"), true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{Index: 0, SMClockMHz: 1410, MemUsedBytes: 4 << 20},
		{Index: 1, SMClockMHz: 210, PowerMW: 55010, Throttle: ThrottleGPUIdle},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	if _, err := ParseSMISamples([]byte("0, 1980, 97\n"), true); err == nil || !strings.Contains(err.Error(), "3 fields, want 6") {
		t.Errorf("short row: err = %v", err)
	}
	if _, err := ParseSMISamples([]byte("0, fast, 97, 1, 1, 0x0\n"), true); err == nil || !strings.Contains(err.Error(), "clocks.sm") {
		t.Errorf("bad number: err = %v", err)
	}
	if _, err := ParseSMISamples([]byte("0, 1, 1, 1, 1, 0xZZ\n"), true); err == nil {
		t.Error("bad bitmask accepted")
	}
}

func TestParseSMIApps(t *testing.T) {
	t.Parallel()
	apps, err := ParseSMIApps(fixture(t, "smi-apps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 3 || apps[0].PID != 4242 || apps[0].UsedMemBytes != 40960<<20 || apps[0].MPSServer() || !apps[1].MPSServer() {
		t.Errorf("apps = %+v", apps)
	}
	for _, empty := range []string{"", "\n", "No running processes found\n"} {
		if apps, err := ParseSMIApps([]byte(empty)); err != nil || len(apps) != 0 {
			t.Errorf("ParseSMIApps(%q) = %v, %v", empty, apps, err)
		}
	}
}

func TestParseSMICUDAVersion(t *testing.T) {
	t.Parallel()
	if v := ParseSMICUDAVersion(fixture(t, "smi-banner.txt")); v != "12.8" {
		t.Errorf("CUDA version %q, want 12.8", v)
	}
	if v := ParseSMICUDAVersion([]byte("no banner")); v != "" {
		t.Errorf("CUDA version %q, want empty", v)
	}
}

// recordedSMI answers nvidia-smi queries from the fixtures and records the calls.
type recordedSMI struct {
	calls          []string
	throttleFields map[string]bool // fields this "driver" knows
}

func (r *recordedSMI) run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.calls = append(r.calls, strings.Join(args, " "))
	if len(args) == 0 {
		return os.ReadFile("testdata/smi-banner.txt")
	}
	q := args[0]
	switch {
	case strings.HasPrefix(q, "--query-gpu="+smiDeviceFields):
		return os.ReadFile("testdata/smi-devices-h200.csv")
	case strings.HasPrefix(q, "--query-gpu="+smiSampleFields):
		extra := strings.TrimPrefix(strings.TrimPrefix(q, "--query-gpu="+smiSampleFields), ",")
		if extra != "" && !r.throttleFields[extra] {
			return nil, errors.New(`Field "` + extra + `" is not a valid field to query.`)
		}
		b, err := os.ReadFile("testdata/smi-samples-h200.csv")
		if extra == "" {
			b = []byte(strings.Replace(string(b), ", 0x0000000000000004", "", 1))
		}
		return b, err
	case strings.HasPrefix(q, "--query-compute-apps="):
		return os.ReadFile("testdata/smi-apps.csv")
	}
	return nil, errors.New("unexpected query " + q)
}

func TestSMISampler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fields   map[string]bool
		throttle uint64
	}{
		{"new driver", map[string]bool{"clocks_event_reasons.active": true}, ThrottleSWPowerCap},
		{"old driver", map[string]bool{"clocks_throttle_reasons.active": true}, ThrottleSWPowerCap},
		{"no throttle field", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recordedSMI{throttleFields: tt.fields}
			s := NewSMI("nvidia-smi", rec.run)
			devs, err := s.Devices(context.Background())
			if err != nil || len(devs) != 1 || devs[0].Name != "NVIDIA H200" || devs[0].MemTotalBytes != 143771<<20 || devs[0].CUDA != "12.8" {
				t.Fatalf("devices %+v, %v", devs, err)
			}
			for i := 0; i < 2; i++ {
				samples, err := s.Sample(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				x := samples[0]
				if x.SMClockMHz != 1980 || x.UtilPct != 97 || x.PowerMW != 612450 || x.Throttle != tt.throttle ||
					x.ComputeProcs != 2 || x.MPSProcs != 1 || x.MonoNs <= 0 {
					t.Errorf("sample %+v", x)
				}
			}
			// The throttle field is resolved once, not on every sample.
			n := 0
			for _, c := range rec.calls {
				if strings.HasPrefix(c, "--query-gpu="+smiSampleFields) {
					n++
				}
			}
			if max := len(smiThrottleFields()) + 2; n > max {
				t.Errorf("%d sample queries for 2 samples: %v", n, rec.calls)
			}
		})
	}
}

func TestOpenSMIUnavailable(t *testing.T) {
	t.Parallel()
	if _, err := OpenSMI(context.Background(), filepath.Join(t.TempDir(), "nvidia-smi")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}
