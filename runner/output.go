package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/runner/gpu"
)

// Output file names inside a campaign directory.
const (
	ProfileFile  = "profile.json"
	CellsFile    = "cells.csv"
	ManifestFile = "manifest.json"
	// PlanFile is the resolved campaign, written before the first cell runs, so that "profile
	// status" lists every cell of a campaign whose runner was killed before it wrote
	// manifest.json.
	PlanFile = "campaign.json"
)

// writePlan writes the resolved campaign to dir/PlanFile (atomically, after checking that it
// parses back into the same cells).
func writePlan(dir string, c *Campaign) error {
	if err := WriteTaskCampaign(filepath.Join(dir, PlanFile), c); err != nil {
		return fmt.Errorf("runner: campaign %s: plan: %w", c.Name, err)
	}
	return nil
}

// BuildProfile turns the latest journal records of a campaign into a profile.Table in the
// simulator's format (docs/profile-format.md): per configuration, the solo step time by GPU
// count and the solo memory per GPU (the driver's account of the job's processes, CUDA
// context included, where it was read; else the allocator's reserved peak) from the solo
// cells, and ξ for both directions of every measured pair (one pooled entry when a
// configuration shares with itself), by GPU count and sharing mode. Pairs whose mode in effect
// differs from the one asked for are left out with a note. It is a pure function of its
// arguments: the same journal gives the same bytes.
func BuildProfile(c *Campaign, latest map[string]Result, command string) (*profile.Table, error) {
	cells := c.Cells()
	t := &profile.Table{Source: "measured", Provenance: profile.Provenance{Origin: "sharebench runner", Command: command}}
	var env *Env
	for _, cell := range cells {
		if r, ok := latest[cell.ID]; ok && r.Status == StatusOK {
			e := r.Env
			env = &e
			break
		}
	}
	if env != nil {
		t.GPU = firstNonEmpty(env.GPU, env.WorkloadGPU)
		if t.GPU == "" && env.Device == "cpu" {
			t.GPU = "cpu"
		}
		t.GPUMemBytes = env.GPUMemBytes
		t.Provenance.Host = hostMap(*env, c.Backend)
	}
	if t.GPU == "" {
		t.GPU = "unknown"
	}
	var notes []string
	models := map[string]*profile.Model{}
	type soloKey struct {
		cfg  profile.Config
		gpus int
	}
	solos := map[soloKey]Result{}
	configs := map[profile.Config]*profile.Solo{}
	var order []profile.Config
	rss, device, reserved, pending := false, 0, 0, 0
	for _, cell := range cells {
		r, ok := latest[cell.ID]
		switch {
		case !ok:
			pending++
			continue
		case r.Status != StatusOK:
			notes = append(notes, fmt.Sprintf("cell %s: %s: %s", cell.Label, r.Status, r.Reason))
			continue
		}
		for _, s := range []*Side{r.A, r.B} {
			if s != nil && s.ShortWindows > 0 {
				notes = append(notes, fmt.Sprintf("cell %s: %d run(s) with a short window", cell.Label, s.ShortWindows))
				break
			}
		}
		if cell.Kind != KindSolo || r.A == nil || r.A.SoloMs == nil {
			continue
		}
		g := cell.A.NGPUs()
		solos[soloKey{cell.A.Config(), g}] = r
		m := models[cell.A.Model]
		if m == nil {
			m = &profile.Model{Name: cell.A.Model, Impl: r.A.Impl}
			models[cell.A.Model] = m
		} else if m.Impl != r.A.Impl {
			notes = append(notes, fmt.Sprintf("model %s: configurations measured with different implementations (%s, %s)", m.Name, m.Impl, r.A.Impl))
		}
		cfg := cell.A.Config()
		sc := configs[cfg]
		if sc == nil {
			sc = &profile.Solo{Batch: cfg.Batch, SubBatch: cfg.SubBatch, IterS: profile.GPUMap{}, IterCIS: map[int][2]float64{}}
			configs[cfg] = sc
			order = append(order, cfg)
		}
		e := r.A.SoloMs
		sc.IterS[g] = round(e.Median/1000, 9)
		sc.IterCIS[g] = [2]float64{round(e.CI[0]/1000, 9), round(e.CI[1]/1000, 9)}
		mem := r.A.MemDeviceBytes
		if mem > 0 {
			device++
		} else {
			mem = r.A.MemReservedBytes
			reserved++
		}
		sc.MemBytes = max(sc.MemBytes, mem)
		if g == 1 || sc.N == 0 {
			sc.N = e.N
		}
		rss = rss || r.A.MemSource == "rss"
	}
	for _, cfg := range order {
		models[cfg.Model].Configs = append(models[cfg.Model].Configs, *configs[cfg])
	}
	for _, spec := range c.Models {
		m := models[spec.Name]
		if m == nil {
			continue
		}
		m.DefaultBatch = spec.DefaultBatch
		if !slices.ContainsFunc(m.Configs, func(s profile.Solo) bool { return s.Batch == spec.DefaultBatch }) {
			m.DefaultBatch = slices.MinFunc(m.Configs, func(a, b profile.Solo) int { return a.Batch - b.Batch }).Batch
		}
		t.Models = append(t.Models, *m)
	}
	for _, cell := range cells {
		r, ok := latest[cell.ID]
		if !ok || r.Status != StatusOK || cell.Kind != KindPair || r.A == nil || r.B == nil {
			continue
		}
		if r.Mode != cell.Mode {
			notes = append(notes, fmt.Sprintf("cell %s: left out: asked for mode %s, in effect %s", cell.Label, cell.Mode, r.Mode))
			continue
		}
		g := cell.GPUs()
		a, b := cell.A.Config(), cell.B.Config()
		sa, okA := solos[soloKey{a, g}]
		sb, okB := solos[soloKey{b, g}]
		if !okA || !okB {
			missing := cell.A
			if okA {
				missing = *cell.B
			}
			notes = append(notes, fmt.Sprintf("cell %s: left out: no solo measurement of %s", cell.Label, missing))
			continue
		}
		xa := pairXi(r.A, sa, SeedFor(cell.ID, "xi-a"))
		xb := pairXi(r.B, sb, SeedFor(cell.ID, "xi-b"))
		if xa == nil || xb == nil {
			notes = append(notes, fmt.Sprintf("cell %s: left out: ξ not computable", cell.Label))
			continue
		}
		mode := profile.Mode(cell.Mode)
		if cell.SameConfig() {
			e := Estimate95(append(slices.Clone(xa.Values), xb.Values...), SeedFor(cell.ID, "xi-pooled"))
			t.Pairs = append(t.Pairs, pairEntry(a, b, g, mode, &e))
			continue
		}
		t.Pairs = append(t.Pairs, pairEntry(a, b, g, mode, xa), pairEntry(b, a, g, mode, xb))
	}
	if pending > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d cells not measured yet", pending, len(cells)))
	}
	switch {
	case c.MaxRepeats == 1:
		notes = append(notes, "R=1 repeat per cell: no confidence intervals (ci = the value)")
	case c.Repeats < BootstrapMinRepeats:
		notes = append(notes, fmt.Sprintf("%d to %d repeats per cell (until the 95%% CI half-width is ≤ %.1f%%): CIs of fewer than %d repeats are Student-t intervals of the mean, bootstrap CIs of the median from %d", c.Repeats, c.MaxRepeats, 100*c.CITarget, BootstrapMinRepeats, BootstrapMinRepeats))
	}
	if device > 0 {
		notes = append(notes, fmt.Sprintf("mem_bytes: the GPU memory the driver accounts to the job's processes (CUDA context included) for %d configurations, the caching allocator's reserved peak for %d", device, reserved))
	}
	if rss {
		notes = append(notes, "mem_bytes of CPU runs are the workload's resident set size, not GPU memory")
	}
	if c.Workload.Tiny {
		notes = append(notes, "tiny models (--tiny): a smoke profile, not a measurement for the paper")
	}
	if c.Backend == BackendFake {
		notes = append(notes, "fake backend: synthetic numbers")
	}
	t.Notes = notes
	if err := t.Normalize(); err != nil {
		return nil, fmt.Errorf("runner: campaign %s: profile: %w", c.Name, err)
	}
	return t, nil
}

// pairXi returns the side's ξ, computing it from the solo cell when the pair cell has no
// solo runs of its own (reuse_solo).
func pairXi(s *Side, solo Result, seed uint64) *Estimate {
	if s.Xi != nil {
		return s.Xi
	}
	if solo.A == nil {
		return nil
	}
	return XiEstimate(s.PairMs, solo.A.SoloMs, seed)
}

func pairEntry(a, b profile.Config, gpus int, mode profile.Mode, e *Estimate) profile.Pair {
	ci := [2]float64{round(e.CI[0], 6), round(e.CI[1], 6)}
	return profile.Pair{A: a, B: b, GPUs: gpus, Mode: mode, Xi: round(e.Median, 6), CI: &ci, N: e.N}
}

// round rounds x to the given number of decimals: profile values have a fixed precision
// (seconds to the nanosecond, ξ to 1e-6), so they print without representation noise.
func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(x*p) / p
}

func hostMap(e Env, backend string) map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{
		"hostname": e.Hostname, "gpu": firstNonEmpty(e.GPU, e.WorkloadGPU), "gpu_uuid": e.GPUUUID, "driver": e.Driver,
		"cuda_driver": e.CUDADriver, "device": e.Device, "torch": e.Torch, "torchvision": e.Torchvision,
		"transformers": e.Transformers, "cuda": e.CUDA, "cudnn": e.CuDNN, "python": e.Python,
		"telemetry": e.Telemetry, "backend": backend,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// CellsCSV renders one row per cell of the campaign, in cell order, with the latest record
// of each (status "pending" when there is none). Times are milliseconds per optimizer step.
func CellsCSV(c *Campaign, latest map[string]Result) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{
		"index", "cell_id", "kind", "label", "status", "model_a", "batch_a", "sub_batch_a", "model_b", "batch_b", "sub_batch_b",
		"gpus", "cell_mode", "repeats", "solo_a_ms", "solo_a_p10_ms", "solo_a_p90_ms", "solo_a_ci_lo_ms", "solo_a_ci_hi_ms", "mem_a_bytes",
		"mem_a_device_bytes", "pair_a_ms", "pair_a_p10_ms", "pair_a_p90_ms", "xi_a", "xi_a_ci_lo", "xi_a_ci_hi", "ci_method",
		"solo_b_ms", "pair_b_ms", "xi_b", "xi_b_ci_lo", "xi_b_ci_hi", "pair_throughput", "short_windows", "mode", "reason", "notes",
	})
	f := func(x float64, prec int) string {
		if x == 0 {
			return ""
		}
		return strconv.FormatFloat(x, 'f', prec, 64)
	}
	for _, cell := range c.Cells() {
		r, ok := latest[cell.ID]
		row := []string{strconv.Itoa(cell.Index), cell.ID, cell.Kind, cell.Label, "pending", cell.A.Model, strconv.Itoa(cell.A.Batch), strconv.Itoa(cell.A.SubBatch)}
		if cell.B != nil {
			row = append(row, cell.B.Model, strconv.Itoa(cell.B.Batch), strconv.Itoa(cell.B.SubBatch))
		} else {
			row = append(row, "", "", "")
		}
		var sa, sb Side
		if ok {
			row[4] = string(r.Status)
			if r.A != nil {
				sa = *r.A
			}
			if r.B != nil {
				sb = *r.B
			}
		}
		est := func(e *Estimate, prec int) (string, string, string) {
			if e == nil {
				return "", "", ""
			}
			return f(e.Median, prec), f(e.CI[0], prec), f(e.CI[1], prec)
		}
		dist := func(d *Dist) (string, string) {
			if d == nil {
				return "", ""
			}
			return f(d.P10, 3), f(d.P90, 3)
		}
		soloA, soloALo, soloAHi := est(sa.SoloMs, 3)
		soloAP10, soloAP90 := dist(sa.SoloDist)
		pairA, _, _ := est(sa.PairMs, 3)
		pairAP10, pairAP90 := dist(sa.PairDist)
		xiA, xiALo, xiAHi := est(sa.Xi, 4)
		soloB, _, _ := est(sb.SoloMs, 3)
		pairB, _, _ := est(sb.PairMs, 3)
		xiB, xiBLo, xiBHi := est(sb.Xi, 4)
		mem, dmem := "", ""
		if sa.MemReservedBytes > 0 {
			mem = strconv.FormatInt(sa.MemReservedBytes, 10)
		}
		if sa.MemDeviceBytes > 0 {
			dmem = strconv.FormatInt(sa.MemDeviceBytes, 10)
		}
		method := ""
		if e := cmpOrEstimate(sa.Xi, sa.SoloMs); e != nil {
			method = e.Method
		}
		repeats := ""
		if ok && r.Repeats > 0 {
			repeats = strconv.Itoa(r.Repeats)
		}
		notes := ""
		if ok {
			nb, _ := json.Marshal(r.Notes)
			if len(r.Notes) > 0 {
				notes = string(nb)
			}
		}
		row = append(row, strconv.Itoa(cell.GPUs()), cell.Mode, repeats, soloA, soloAP10, soloAP90, soloALo, soloAHi, mem,
			dmem, pairA, pairAP10, pairAP90, xiA, xiALo, xiAHi, method, soloB, pairB, xiB, xiBLo, xiBHi, f(r.PairThroughput, 4),
			strconv.Itoa(sa.ShortWindows+sb.ShortWindows), r.Mode, r.Reason, notes)
		w.Write(row)
	}
	w.Flush()
	return buf.Bytes()
}

// Manifest describes a campaign directory: where, how and with what the cells were measured.
type Manifest struct {
	Format  string `json:"format"` // "sharebench-profile-run"
	Version int    `json:"version"`
	// Campaign is the resolved campaign, verbatim.
	Campaign  *Campaign `json:"campaign"`
	Command   string    `json:"command,omitempty"`
	Revision  string    `json:"revision"`
	GoVersion string    `json:"go_version"`
	Host      HostInfo  `json:"host"`
	// GPUs are the devices telemetry saw (empty without telemetry).
	GPUs []gpu.DeviceInfo `json:"gpus,omitempty"`
	// Software holds library versions from the workloads' start events.
	Software map[string]string `json:"software,omitempty"`
	// Impl maps each model to the implementation measured.
	Impl map[string]string `json:"impl,omitempty"`
	// SharingMode says which modes were in effect in the measured pair cells
	// ("timeslice: 12 pair cells, mps: 12 pair cells"); PairModes counts them.
	SharingMode string         `json:"sharing_mode"`
	PairModes   map[string]int `json:"pair_modes,omitempty"`
	// MPSUnavailable says why mps cells could not be measured, when they could not.
	MPSUnavailable string `json:"mps_unavailable,omitempty"`
	// Precision is the FP32 math in effect as the workloads read it back (mode, matmul and
	// convolution TF32); Timing how they timed micro-steps.
	Precision        map[string]any `json:"precision,omitempty"`
	Timing           string         `json:"timing,omitempty"`
	MPS              gpu.MPSStatus  `json:"mps"`
	MPSObservedCells int            `json:"mps_observed_cells,omitempty"`
	Telemetry        string         `json:"telemetry"`
	// SMClockMinMHz is the lowest SM clock seen in any window; SMClockMedianMHz the median
	// of the runs' medians.
	SMClockMinMHz    int       `json:"sm_clock_min_mhz,omitempty"`
	SMClockMedianMHz int       `json:"sm_clock_median_mhz,omitempty"`
	Throttle         []string  `json:"throttle,omitempty"`
	ThrottledRuns    int       `json:"throttled_runs,omitempty"`
	Backend          string    `json:"backend"`
	Cells            Counts    `json:"cells"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished,omitempty"`
	Files            []string  `json:"files"`
}

// HostInfo describes the machine the runner ran on.
type HostInfo struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	// CPUAffinity is the runner's CPU affinity, which the workloads inherit ("0-15").
	CPUAffinity string `json:"cpu_affinity,omitempty"`
}

// Counts tallies cells by status.
type Counts struct {
	Total               int `json:"total"`
	OK                  int `json:"ok"`
	Infeasible          int `json:"infeasible"`
	InfeasiblePredicted int `json:"infeasible_predicted"`
	Failed              int `json:"failed"`
	Unavailable         int `json:"unavailable,omitempty"`
	Pending             int `json:"pending"`
}

// CountCells tallies the latest records of a campaign's cells.
func CountCells(cells []Cell, latest map[string]Result) Counts {
	n := Counts{Total: len(cells)}
	for _, cell := range cells {
		r, ok := latest[cell.ID]
		switch {
		case !ok:
			n.Pending++
		case r.Status == StatusOK:
			n.OK++
		case r.Status == StatusInfeasible:
			n.Infeasible++
		case r.Status == StatusInfeasiblePredicted:
			n.InfeasiblePredicted++
		case r.Status == StatusUnavailable:
			n.Unavailable++
		default:
			n.Failed++
		}
	}
	return n
}

// Revision returns the VCS revision the binary was built from (with "-modified" for a dirty
// tree), or "unknown", and the Go version.
func Revision() (rev, goVersion string) {
	goVersion = runtime.Version()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown", goVersion
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		rev = bi.Main.Version
		if rev == "" || rev == "(devel)" {
			rev = "unknown"
		}
	}
	if modified {
		rev += "-modified"
	}
	return rev, goVersion
}

// buildManifest assembles the manifest from the campaign, the host and the records.
func buildManifest(c *Campaign, latest map[string]Result, host HostInfo, devs []gpu.DeviceInfo, mps gpu.MPSStatus, telemetry, backend, command string, started, finished time.Time) Manifest {
	rev, gover := Revision()
	cells := c.Cells()
	m := Manifest{
		Format: "sharebench-profile-run", Version: 1, Campaign: c, Command: command, Revision: rev, GoVersion: gover,
		Host: host, GPUs: devs, MPS: mps, Telemetry: telemetry, Backend: backend, Cells: CountCells(cells, latest),
		Started: started, Finished: finished, Software: map[string]string{}, Impl: map[string]string{}, PairModes: map[string]int{},
		Files: []string{JournalFile, CellsFile, ProfileFile, ManifestFile},
	}
	var medians []int
	for _, cell := range cells {
		r, ok := latest[cell.ID]
		if !ok {
			continue
		}
		if r.Mode == ModeMPSObserved {
			m.MPSObservedCells++
		}
		if cell.Kind == KindPair && r.Status == StatusOK {
			m.PairModes[r.Mode]++
		}
		if m.Precision == nil && r.Env.Precision != nil {
			m.Precision, m.Timing = r.Env.Precision, r.Env.Timing
		}
		if r.Status == StatusUnavailable && strings.HasPrefix(r.Reason, "MPS unavailable") && m.MPSUnavailable == "" {
			m.MPSUnavailable = r.Reason
		}
		e := r.Env
		for k, v := range map[string]string{"torch": e.Torch, "torchvision": e.Torchvision, "transformers": e.Transformers,
			"cuda": e.CUDA, "cudnn": e.CuDNN, "python": e.Python, "device": e.Device} {
			if v != "" && m.Software[k] == "" {
				m.Software[k] = v
			}
		}
		for _, s := range []*Side{r.A, r.B} {
			if s != nil && s.Impl != "" && m.Impl[s.Member.Model] == "" {
				m.Impl[s.Member.Model] = s.Impl
			}
		}
		for _, run := range r.Runs {
			ts := run.Telemetry
			if ts == nil || ts.Samples == 0 {
				continue
			}
			if ts.SMClockMinMHz > 0 && (m.SMClockMinMHz == 0 || ts.SMClockMinMHz < m.SMClockMinMHz) {
				m.SMClockMinMHz = ts.SMClockMinMHz
			}
			if ts.SMClockMedianMHz > 0 {
				medians = append(medians, ts.SMClockMedianMHz)
			}
			if len(ts.Throttle) > 0 {
				m.ThrottledRuns++
				for _, t := range ts.Throttle {
					if !slices.Contains(m.Throttle, t) {
						m.Throttle = append(m.Throttle, t)
					}
				}
			}
		}
	}
	slices.Sort(m.Throttle)
	if len(medians) > 0 {
		slices.Sort(medians)
		m.SMClockMedianMHz = medians[(len(medians)-1)/2]
	}
	var modes []string
	for _, k := range slices.Sorted(maps.Keys(m.PairModes)) {
		modes = append(modes, fmt.Sprintf("%s: %d pair cells", k, m.PairModes[k]))
	}
	m.SharingMode = strings.Join(modes, ", ")
	if m.SharingMode == "" {
		m.SharingMode = "no pair measured"
	}
	return m
}

// hostInfo describes this machine.
func hostInfo() HostInfo {
	h, _ := os.Hostname()
	return HostInfo{Hostname: h, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), CPUAffinity: cpuAffinity()}
}

// marshalIndent encodes v as indented JSON with a trailing newline.
func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
