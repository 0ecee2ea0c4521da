package runner

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sharebench/sharebench/dispatch"
	"github.com/sharebench/sharebench/profile"
)

// Backend names accepted in campaigns and on the command line.
const (
	BackendLocal     = "local"
	BackendContainer = "container"
	BackendFake      = "fake"
)

// Execution orders.
const (
	OrderCampaign = "campaign"
	OrderLevels   = "levels"
)

// Workload process lifetimes (Campaign.Workers).
const (
	// WorkersFresh starts fresh workload processes for every run (the default).
	WorkersFresh = "fresh"
	// WorkersWarm keeps one long-lived process per configuration (train.py --serve) and has it
	// run the measurement windows of every cell that needs it (docs/runner.md, "Warm workers").
	WorkersWarm = "warm"
)

// Pair grids.
const (
	// GridFull pairs every sub-batch of A with every sub-batch of B (|b_A|·|b_B| cells).
	GridFull = "full"
	// GridMatched pairs the i-th sub-batch level of A with the i-th of B (b = B/2^i on both sides).
	GridMatched = "matched"
)

// EnvPython names the environment variable that overrides workload.python.
const EnvPython = "SHAREBENCH_PYTHON"

// Duration is a time.Duration written as a Go duration string ("10s", "2m30s") in YAML and
// JSON, the same type as the engines' polling intervals.
type Duration = dispatch.Duration

// Campaign is a profiling campaign: which models, batches and sub-batches to measure alone
// and in pairs, and how (docs/runner.md, "Measurement protocol"). It is read from YAML (docs/runner.md has the
// reference), completed by Resolve, and recorded verbatim in manifest.json.
type Campaign struct {
	// Name labels the campaign in outputs; letters, digits, '.', '_' and '-'.
	Name string `yaml:"name" json:"name"`
	// Backend is local (default), container or fake; the command line may override it.
	Backend string `yaml:"backend,omitempty" json:"backend"`
	// Modes are the sharing modes pairs are measured under: timeslice (default) and mps.
	// MPS pairs need an MPS control daemon; the runner uses a running one or starts its own
	// and records the mode actually in effect (cells it cannot measure are unavailable).
	Modes []string `yaml:"modes,omitempty" json:"modes"`
	// Seed is passed to every workload (--seed) and seeds the fake workload's step times.
	Seed int64 `yaml:"seed,omitempty" json:"seed"`
	// Models lists what to measure.
	Models []ModelSpec `yaml:"models" json:"models"`
	// Pairs lists model pairs to co-locate; empty means all unordered pairs of Models plus
	// each model with itself. Each entry is two model names.
	Pairs [][]string `yaml:"pairs,omitempty" json:"pairs,omitempty"`
	// SoloOnly skips pair cells.
	SoloOnly bool `yaml:"solo_only,omitempty" json:"solo_only,omitempty"`
	// PairGrid is full (default) or matched.
	PairGrid string `yaml:"pair_grid,omitempty" json:"pair_grid"`
	// SubBatchLevels is how many sub-batches per batch when a model lists none:
	// b ∈ {B, B/2, …} (default 1: b = B only), never below the model's min_sub_batch.
	SubBatchLevels int `yaml:"sub_batch_levels,omitempty" json:"sub_batch_levels"`
	// Repeats is the least number of repeats per cell, each in fresh processes (default 3).
	Repeats int `yaml:"repeats,omitempty" json:"repeats"`
	// MaxRepeats is the most (default 10): after Repeats, a cell repeats until the 95% CI
	// half-width of what it measures (ξ of both sides for pairs, the step time for solo
	// cells) is at most CITarget of its value, or MaxRepeats is reached.
	MaxRepeats int `yaml:"max_repeats,omitempty" json:"max_repeats"`
	// CITarget is that relative half-width (default 0.02).
	CITarget float64 `yaml:"ci_target,omitempty" json:"ci_target"`
	// ReuseSolo takes a pair's solo step times from the solo cells instead of re-measuring
	// them inside the pair cell (faster, weaker drift control).
	ReuseSolo bool `yaml:"reuse_solo,omitempty" json:"reuse_solo"`
	// Warmup is passed to the workload.
	Warmup Warmup `yaml:"warmup,omitempty" json:"warmup"`
	// Window sets the overlap-window requirement and the measurement limit.
	Window Window `yaml:"window,omitempty" json:"window"`
	// Workload says what to run.
	Workload Workload `yaml:"workload,omitempty" json:"workload"`
	// Timeouts bound each phase of a run.
	Timeouts Timeouts `yaml:"timeouts,omitempty" json:"timeouts"`
	// Budget bounds the campaign's wall time (0: none): no cell starts that is not expected to
	// end within it (cells of the same kind that ran set the expectation), and no repeat
	// starts after it. Cells left out stay pending and run on the next invocation.
	Budget Duration `yaml:"budget,omitempty" json:"budget,omitempty"`
	// Order is the execution order: campaign (default: solo cells, then pairs) or levels
	// (sub-batch level 0 solo cells, then its time-slicing pairs, then level 1, …, and the
	// pairs of other sharing modes level by level after all of them), so that a budget that
	// runs out leaves whole levels measured.
	Order string `yaml:"order,omitempty" json:"order"`
	// Workers is fresh (default: new processes for every run) or warm (one long-lived process
	// per configuration and sharing mode, built and warmed up once, that runs the windows of
	// every cell needing it; a pair of a configuration with itself gets a second one). Warm
	// workers need one GPU (or device cpu) and jobs of one GPU; the cluster engines, which run
	// each cell as its own task, start fresh processes for them.
	Workers string `yaml:"workers,omitempty" json:"workers"`
	// ForeignWait bounds the wait for compute processes that are not the runner's to leave a
	// cell's GPUs before it starts (default 60s; then it runs with a note).
	ForeignWait Duration `yaml:"foreign_wait,omitempty" json:"foreign_wait"`
	// GPUs lists the devices to use (indices or UUIDs); one cell per GPU at a time.
	// Default ["0"]; ignored for device cpu.
	GPUs []string `yaml:"gpus,omitempty" json:"gpus"`
	// Telemetry is auto (default), nvml, smi, none or fake.
	Telemetry string `yaml:"telemetry,omitempty" json:"telemetry"`
	// TelemetryInterval is the sampling period (default 200ms; nvidia-smi at least 500ms).
	TelemetryInterval Duration `yaml:"telemetry_interval,omitempty" json:"telemetry_interval"`
	// GPUMemBytes overrides the GPU memory used to predict infeasible pairs (0: from
	// telemetry; unknown disables the prediction).
	GPUMemBytes int64 `yaml:"gpu_mem_bytes,omitempty" json:"gpu_mem_bytes,omitempty"`
	// MemMarginBytes is the headroom in that prediction (default 1 GiB).
	MemMarginBytes int64 `yaml:"mem_margin_bytes,omitempty" json:"mem_margin_bytes"`
	// Container configures the container backend.
	Container ContainerConfig `yaml:"container,omitempty" json:"container"`
	// Fake configures the fake backend.
	Fake FakeConfig `yaml:"fake,omitempty" json:"fake"`
	// Slurm and Kubernetes configure the cluster engines ("profile run --backend slurm" or
	// "kubernetes"), which run every cell as a task with the backend above. They do not
	// change what is measured, so cell IDs ignore them.
	Slurm      SlurmConfig `yaml:"slurm,omitempty" json:"slurm,omitzero"`
	Kubernetes KubeConfig  `yaml:"kubernetes,omitempty" json:"kubernetes,omitzero"`
}

// ModelSpec is one model of a campaign.
type ModelSpec struct {
	// Name is the workload's model key (train.py --model).
	Name string `yaml:"name" json:"name"`
	// Batches lists the global per-GPU batches B to measure.
	Batches []int `yaml:"batches" json:"batches"`
	// GPUs lists the GPU counts to measure the model at (default [1]): a job of n GPUs runs
	// as n processes (torch.distributed), and pairs co-locate jobs of the same count on the
	// same n GPUs.
	GPUs []int `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// SubBatches lists sub-batches b explicitly; each must divide the batch it is used with
	// (those that do not are skipped for that batch). Empty: derived from sub_batch_levels.
	SubBatches []int `yaml:"sub_batches,omitempty" json:"sub_batches,omitempty"`
	// MinSubBatch bounds derived sub-batches (default from workloads/catalog.json, else 1 for
	// bert/gpt models and 8 otherwise).
	MinSubBatch int `yaml:"min_sub_batch,omitempty" json:"min_sub_batch,omitempty"`
	// DefaultBatch is the profile's default_batch (default: the first batch).
	DefaultBatch int `yaml:"default_batch,omitempty" json:"default_batch,omitempty"`
	// SeqLen and ImageSize are passed to the workload when set.
	SeqLen    int `yaml:"seq_len,omitempty" json:"seq_len,omitempty"`
	ImageSize int `yaml:"image_size,omitempty" json:"image_size,omitempty"`
	// Args are extra workload arguments for this model (e.g. ["--inject", "oom@warmup"]).
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
}

// Warmup is the workload's warm-up: at least Steps steps and at least Seconds.
type Warmup struct {
	Steps   int     `yaml:"steps,omitempty" json:"steps"`
	Seconds float64 `yaml:"seconds,omitempty" json:"seconds"`
}

// Window is the overlap-window rule (docs/runner.md, "Window"): after trimming Trim steps at each end,
// every job needs at least FloorSteps steps and either MinSteps steps or MinSeconds seconds
// in the window. A run stops as soon as all jobs meet it, or after MaxSeconds (then it is
// marked short_window).
type Window struct {
	MinSteps   int     `yaml:"min_steps,omitempty" json:"min_steps"`
	MinSeconds float64 `yaml:"min_seconds,omitempty" json:"min_seconds"`
	FloorSteps int     `yaml:"floor_steps,omitempty" json:"floor_steps"`
	Trim       int     `yaml:"trim,omitempty" json:"trim"`
	MaxSeconds float64 `yaml:"max_seconds,omitempty" json:"max_seconds"`
}

// Workload says how to start a workload process.
type Workload struct {
	// Python is the interpreter (default python3; $SHAREBENCH_PYTHON overrides it).
	Python string `yaml:"python,omitempty" json:"python"`
	// Script is the workload script (default workloads/train.py, relative to the working
	// directory).
	Script string `yaml:"script,omitempty" json:"script"`
	// Command replaces [python, script] entirely when set.
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// Device is cuda (default) or cpu.
	Device string `yaml:"device,omitempty" json:"device"`
	// Tiny shrinks models and inputs for CPU tests (--tiny).
	Tiny bool `yaml:"tiny,omitempty" json:"tiny"`
	// Threads sets --threads and OMP_NUM_THREADS (default 2).
	Threads int `yaml:"threads,omitempty" json:"threads"`
	// MemFraction caps each process's CUDA allocator at this fraction of the GPU (0: off).
	MemFraction float64 `yaml:"mem_fraction,omitempty" json:"mem_fraction,omitempty"`
	// AMP is off (default) or bf16.
	AMP string `yaml:"amp,omitempty" json:"amp"`
	// Precision is the FP32 math: default (PyTorch's own settings: cuDNN convolutions may use
	// TF32, matmuls do not), strict-fp32 (no TF32) or tf32 (TF32 everywhere). The precision in
	// effect, as the workload reads it back, is in the manifest.
	Precision string `yaml:"precision,omitempty" json:"precision"`
	// Impl selects a model implementation (train.py --impl; default auto).
	Impl string `yaml:"impl,omitempty" json:"impl,omitempty"`
	// MaxSteps is a safety cap on measured steps per process (0: none; stop ends the run).
	MaxSteps int `yaml:"max_steps,omitempty" json:"max_steps,omitempty"`
	// Args are extra arguments for every workload process.
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Env is extra environment for every workload process.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
}

// Timeouts bound a run's phases. A run that exceeds one fails (and its cell with it).
type Timeouts struct {
	// Ready bounds start-up plus warm-up of one process (default 10m).
	Ready Duration `yaml:"ready,omitempty" json:"ready"`
	// Stall bounds the gap between two steps of a process while measuring (default 2m).
	Stall Duration `yaml:"stall,omitempty" json:"stall"`
	// Grace is how long a process may take to exit after stop, and after SIGTERM before
	// SIGKILL (default 15s).
	Grace Duration `yaml:"grace,omitempty" json:"grace"`
}

// ContainerConfig configures the container backend.
type ContainerConfig struct {
	// Engine is docker (default) or podman.
	Engine string `yaml:"engine,omitempty" json:"engine,omitempty"`
	// Image is the workload image.
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Python is the interpreter inside the image (default python3).
	Python string `yaml:"python,omitempty" json:"python,omitempty"`
	// WorkloadsDir is the host directory mounted read-only at MountPoint (default: the
	// directory of workload.script).
	WorkloadsDir string `yaml:"workloads_dir,omitempty" json:"workloads_dir,omitempty"`
	// MountPoint is where WorkloadsDir appears in the container (default /opt/sharebench).
	MountPoint string `yaml:"mount_point,omitempty" json:"mount_point,omitempty"`
	// Runtime is passed as --runtime (podman in restricted sandboxes: runc).
	Runtime string `yaml:"runtime,omitempty" json:"runtime,omitempty"`
	// Ulimits are passed as --ulimit values, e.g. nofile=1024:1024.
	Ulimits []string `yaml:"ulimits,omitempty" json:"ulimits,omitempty"`
	// Command replaces [python, mount_point/train.py] inside the container when set.
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
}

// charsetOK reports whether s is 1..maxLen bytes, starts with a letter or digit (or '_' when
// extra contains it and first is false) and otherwise uses letters, digits and extra.
func charsetOK(s string, maxLen int, extra string, alnumFirst bool) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		alnum := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9'
		if alnum {
			continue
		}
		if i == 0 && alnumFirst || !strings.ContainsRune(extra, rune(ch)) {
			return false
		}
	}
	return true
}

// safeImage reports whether s is a plain container image reference.
func safeImage(s string) bool { return charsetOK(s, 256, "._-/:@", true) }

// safeEnvKey reports whether s is a valid environment variable name.
func safeEnvKey(s string) bool {
	return charsetOK(s, 128, "_", false) && !(s[0] >= '0' && s[0] <= '9')
}

// safeUlimit reports whether s looks like name=soft[:hard].
func safeUlimit(s string) bool {
	name, lim, ok := strings.Cut(s, "=")
	if !ok || !charsetOK(name, 32, "", true) || lim == "" {
		return false
	}
	for _, part := range strings.SplitN(lim, ":", 2) {
		if _, err := strconv.ParseInt(part, 10, 64); err != nil {
			return false
		}
	}
	return true
}

// finite reports whether every x is a finite number.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// ParseCampaign decodes a campaign from YAML, rejecting unknown fields, and resolves it.
// name labels errors (usually the file name).
func ParseCampaign(data []byte, name string) (*Campaign, error) {
	if len(data) > MaxCampaignBytes {
		return nil, fmt.Errorf("campaign %s: %d bytes: larger than %d", name, len(data), MaxCampaignBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("campaign %s: empty file", name)
		}
		return nil, fmt.Errorf("campaign %s: %w", name, err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("campaign %s: more than one YAML document", name)
	}
	c := DefaultCampaign()
	if err := strictInts(&doc, reflect.TypeOf(c), ""); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", name, err)
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&c); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", name, err)
	}
	if err := c.Resolve(); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", name, err)
	}
	return &c, nil
}

// MaxCampaignBytes bounds a campaign file; MaxCells bounds the cells it expands into. Both
// refuse absurd campaigns before they take the machine's memory.
const (
	MaxCampaignBytes = 4 << 20
	MaxCells         = 20000
)

// strictInts rejects a YAML number that is not an integer where v wants one (the YAML
// decoder would truncate "repeats: 1.5" to 1): every int field, slice element and map value
// of t, positioned by line. path names the field in the error.
func strictInts(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return strictInts(n.Content[0], t, path)
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return strictInts(n.Alias, t, path)
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return nil // durations and other types that read themselves
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!int" && n.ShortTag() != "!!null" {
			return fmt.Errorf("line %d: %s: %s is not an integer", n.Line, path, n.Value)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for i, e := range n.Content {
				if err := strictInts(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if err := strictInts(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value); err != nil {
					return err
				}
			}
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			ft, ok := fields[key]
			if !ok {
				continue // the decoder reports unknown fields
			}
			p := key
			if path != "" {
				p = path + "." + key
			}
			if err := strictInts(n.Content[i+1], ft, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlFields maps the YAML keys of struct t (inline fields included) to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// LoadCampaign reads and resolves the campaign file at path.
func LoadCampaign(path string) (*Campaign, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCampaignBytes+1))
	if err != nil {
		return nil, fmt.Errorf("campaign: %w", err)
	}
	return ParseCampaign(data, filepath.Base(path))
}

// ApplyEnv applies environment overrides ($SHAREBENCH_PYTHON) through getenv.
func (c *Campaign) ApplyEnv(getenv func(string) string) {
	if p := getenv(EnvPython); p != "" {
		c.Workload.Python = p
	}
}

// DefaultCampaign returns a campaign holding the defaults of the fields where zero is a
// meaningful value (warm-up steps and seconds, window trim and min_seconds). ParseCampaign
// decodes YAML over it; code that builds a Campaign should start from it too. Resolve fills
// the other defaults.
func DefaultCampaign() Campaign {
	return Campaign{
		Warmup: Warmup{Steps: 20, Seconds: 10},
		Window: Window{MinSteps: 30, MinSeconds: 20, FloorSteps: 10, Trim: 2, MaxSeconds: 120},
	}
}

// Resolve fills the remaining defaults (fields whose zero value is invalid) and validates c.
// It is idempotent, so callers may change fields (backend, python) and resolve again. Errors
// name the offending field.
func (c *Campaign) Resolve() error {
	setDefault(&c.Backend, BackendLocal)
	if len(c.Modes) == 0 {
		c.Modes = []string{string(profile.Timeslice)}
	}
	setDefault(&c.PairGrid, GridFull)
	setDefault(&c.Order, OrderCampaign)
	setDefault(&c.Workers, WorkersFresh)
	setDefault(&c.Workload.Precision, "default")
	setDefault(&c.Workload.Python, "python3")
	setDefault(&c.Workload.Script, "workloads/train.py")
	setDefault(&c.Workload.Device, "cuda")
	setDefault(&c.Workload.AMP, "off")
	setDefault(&c.Telemetry, "auto")
	setDefault(&c.Container.Engine, "docker")
	setDefault(&c.Container.Python, "python3")
	setDefault(&c.Container.MountPoint, "/opt/sharebench")
	setDefaultInt(&c.SubBatchLevels, 1)
	setDefaultInt(&c.Repeats, 3)
	setDefaultInt(&c.MaxRepeats, max(10, c.Repeats))
	if c.CITarget == 0 {
		c.CITarget = 0.02
	}
	if c.ForeignWait == 0 {
		c.ForeignWait = Duration(time.Minute)
	}
	setDefaultInt(&c.Window.MinSteps, 30)
	setDefaultInt(&c.Window.FloorSteps, 10)
	if c.Window.MaxSeconds == 0 {
		c.Window.MaxSeconds = 120
	}
	setDefaultInt(&c.Workload.Threads, 2)
	if c.Timeouts.Ready == 0 {
		c.Timeouts.Ready = Duration(10 * time.Minute)
	}
	if c.Timeouts.Stall == 0 {
		c.Timeouts.Stall = Duration(2 * time.Minute)
	}
	if c.Timeouts.Grace == 0 {
		c.Timeouts.Grace = Duration(15 * time.Second)
	}
	if c.TelemetryInterval == 0 {
		c.TelemetryInterval = Duration(200 * time.Millisecond)
	}
	if c.MemMarginBytes == 0 {
		c.MemMarginBytes = 1 << 30
	}
	if len(c.GPUs) == 0 {
		c.GPUs = []string{"0"}
	}
	if c.Container.WorkloadsDir == "" && len(c.Container.Command) == 0 {
		c.Container.WorkloadsDir = filepath.Dir(c.Workload.Script)
	}
	if err := c.validate(); err != nil {
		return err
	}
	catalog := readCatalog(filepath.Join(filepath.Dir(c.Workload.Script), "catalog.json"))
	for i := range c.Models {
		m := &c.Models[i]
		if len(m.GPUs) == 0 {
			m.GPUs = []int{1}
		}
		if m.MinSubBatch == 0 {
			m.MinSubBatch = catalog[m.Name]
		}
		if m.MinSubBatch == 0 {
			m.MinSubBatch = 8
			if strings.HasPrefix(m.Name, "bert") || strings.HasPrefix(m.Name, "gpt") {
				m.MinSubBatch = 1
			}
		}
		if m.DefaultBatch == 0 {
			m.DefaultBatch = m.Batches[0]
		}
		if !slices.Contains(m.Batches, m.DefaultBatch) {
			return fmt.Errorf("models[%d].default_batch: %d is not among its batches", i, m.DefaultBatch)
		}
		for _, b := range m.Batches {
			if len(m.subBatches(b, c.SubBatchLevels)) == 0 {
				return fmt.Errorf("models[%d].sub_batches: none divides batch %d", i, b)
			}
		}
	}
	if solo, pair := c.CellCount(); solo+pair > MaxCells {
		return fmt.Errorf("models and pairs: %d cells (%d solo, %d pair): more than %d; list fewer batches, sub-batches, pairs or modes", solo+pair, solo, pair, MaxCells)
	}
	return nil
}

func setDefault(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

func setDefaultInt(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}

func (c *Campaign) validate() error {
	if c.Name == "" {
		return errors.New("name: missing")
	}
	if !dispatch.SafeName(c.Name) {
		return fmt.Errorf("name: %q: use letters, digits, '.', '_' and '-'", c.Name)
	}
	switch c.Backend {
	case BackendLocal, BackendContainer, BackendFake:
	default:
		return fmt.Errorf("backend: %q: want local, container or fake", c.Backend)
	}
	for i, m := range c.Modes {
		if _, err := profile.ParseMode(m); err != nil {
			return fmt.Errorf("modes[%d]: %v", i, err)
		}
		if slices.Contains(c.Modes[:i], m) {
			return fmt.Errorf("modes[%d]: duplicate mode %q", i, m)
		}
	}
	switch c.Order {
	case OrderCampaign, OrderLevels:
	default:
		return fmt.Errorf("order: %q: want campaign or levels", c.Order)
	}
	switch c.PairGrid {
	case GridFull, GridMatched:
	default:
		return fmt.Errorf("pair_grid: %q: want full or matched", c.PairGrid)
	}
	switch c.Workers {
	case WorkersFresh:
	case WorkersWarm:
		// A worker is bound to the GPU it initialised CUDA on, and --serve runs one process.
		if c.Workload.Device != "cpu" && len(c.GPUs) != 1 {
			return fmt.Errorf("workers: warm needs one GPU (gpus: [\"0\"]); %d given", len(c.GPUs))
		}
		for i, m := range c.Models {
			for _, g := range m.GPUs {
				if g != 1 {
					return fmt.Errorf("models[%d].gpus: workers: warm runs jobs of one GPU; %s has %d", i, m.Name, g)
				}
			}
		}
	default:
		return fmt.Errorf("workers: %q: want fresh or warm", c.Workers)
	}
	if len(c.Models) == 0 {
		return errors.New("models: none given")
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		if !dispatch.SafeName(m.Name) {
			return fmt.Errorf("models[%d].name: %q: use letters, digits, '.', '_' and '-'", i, m.Name)
		}
		if seen[m.Name] {
			return fmt.Errorf("models[%d].name: duplicate model %q", i, m.Name)
		}
		seen[m.Name] = true
		if len(m.Batches) == 0 {
			return fmt.Errorf("models[%d].batches: none given", i)
		}
		for j, b := range m.Batches {
			if b <= 0 {
				return fmt.Errorf("models[%d].batches[%d]: %d must be positive", i, j, b)
			}
			if slices.Contains(m.Batches[:j], b) {
				return fmt.Errorf("models[%d].batches[%d]: duplicate batch %d", i, j, b)
			}
		}
		for j, b := range m.SubBatches {
			if b <= 0 {
				return fmt.Errorf("models[%d].sub_batches[%d]: %d must be positive", i, j, b)
			}
			if slices.Contains(m.SubBatches[:j], b) {
				return fmt.Errorf("models[%d].sub_batches[%d]: duplicate sub-batch %d", i, j, b)
			}
		}
		for j, g := range m.GPUs {
			if g < 1 || g > 64 {
				return fmt.Errorf("models[%d].gpus[%d]: %d: want 1..64", i, j, g)
			}
			if slices.Contains(m.GPUs[:j], g) {
				return fmt.Errorf("models[%d].gpus[%d]: duplicate GPU count %d", i, j, g)
			}
		}
		if len(m.Batches) > 64 || len(m.SubBatches) > 64 || len(m.GPUs) > 8 {
			return fmt.Errorf("models[%d]: at most 64 batches, 64 sub-batches and 8 GPU counts", i)
		}
		if m.MinSubBatch < 0 || m.SeqLen < 0 || m.ImageSize < 0 || m.DefaultBatch < 0 {
			return fmt.Errorf("models[%d]: min_sub_batch, seq_len, image_size and default_batch must not be negative", i)
		}
	}
	pairs := map[[2]string]bool{}
	for i, p := range c.Pairs {
		if len(p) != 2 {
			return fmt.Errorf("pairs[%d]: want two model names, got %d", i, len(p))
		}
		for _, n := range p {
			if !seen[n] {
				return fmt.Errorf("pairs[%d]: unknown model %q", i, n)
			}
		}
		k := [2]string{min(p[0], p[1]), max(p[0], p[1])}
		if pairs[k] {
			return fmt.Errorf("pairs[%d]: duplicate pair %s+%s", i, p[0], p[1])
		}
		pairs[k] = true
	}
	if c.SubBatchLevels < 1 || c.SubBatchLevels > 16 {
		return fmt.Errorf("sub_batch_levels: %d: want 1..16", c.SubBatchLevels)
	}
	if c.Repeats < 1 || c.MaxRepeats < c.Repeats || c.MaxRepeats > 1000 {
		return fmt.Errorf("repeats %d, max_repeats %d: want 1 ≤ repeats ≤ max_repeats ≤ 1000", c.Repeats, c.MaxRepeats)
	}
	if !(c.CITarget > 0 && c.CITarget < 1) {
		return fmt.Errorf("ci_target: %v: want a relative half-width in (0, 1)", c.CITarget)
	}
	if c.Budget < 0 || c.ForeignWait < 0 {
		return errors.New("budget and foreign_wait must not be negative")
	}
	if !finite(c.Warmup.Seconds, c.Window.MinSeconds, c.Window.MaxSeconds, c.Workload.MemFraction) {
		return errors.New("warmup, window and workload.mem_fraction: numbers must be finite")
	}
	if c.Warmup.Steps < 0 || c.Warmup.Seconds < 0 {
		return errors.New("warmup: steps and seconds must not be negative")
	}
	w := c.Window
	if w.MinSteps < 1 || w.FloorSteps < 1 || w.Trim < 0 || w.MinSeconds < 0 || w.MaxSeconds <= 0 {
		return errors.New("window: min_steps and floor_steps must be ≥ 1, trim and min_seconds ≥ 0, max_seconds > 0")
	}
	if c.Workload.Device != "cuda" && c.Workload.Device != "cpu" {
		return fmt.Errorf("workload.device: %q: want cuda or cpu", c.Workload.Device)
	}
	if c.Workload.AMP != "off" && c.Workload.AMP != "bf16" {
		return fmt.Errorf("workload.amp: %q: want off or bf16", c.Workload.AMP)
	}
	switch c.Workload.Precision {
	case "default", "strict-fp32", "tf32":
	default:
		return fmt.Errorf("workload.precision: %q: want default, strict-fp32 or tf32", c.Workload.Precision)
	}
	if c.Workload.Threads < 1 {
		return fmt.Errorf("workload.threads: %d: want at least 1", c.Workload.Threads)
	}
	if c.Workload.MemFraction < 0 || c.Workload.MemFraction > 1 {
		return fmt.Errorf("workload.mem_fraction: %v: want 0 (off) or a value in (0, 1]", c.Workload.MemFraction)
	}
	if c.Workload.MaxSteps < 0 {
		return errors.New("workload.max_steps: must not be negative")
	}
	if c.Workload.Impl != "" && !dispatch.SafeName(c.Workload.Impl) {
		return fmt.Errorf("workload.impl: %q: use letters, digits, '.', '_' and '-'", c.Workload.Impl)
	}
	for _, k := range slices.Sorted(mapKeys(c.Workload.Env)) {
		if !safeEnvKey(k) {
			return fmt.Errorf("workload.env: %q is not a valid variable name", k)
		}
	}
	if c.Timeouts.Ready <= 0 || c.Timeouts.Stall <= 0 || c.Timeouts.Grace <= 0 {
		return errors.New("timeouts: ready, stall and grace must be positive")
	}
	for i, g := range c.GPUs {
		if !dispatch.SafeName(g) {
			return fmt.Errorf("gpus[%d]: %q is not a GPU index or UUID", i, g)
		}
	}
	switch c.Telemetry {
	case "auto", "nvml", "smi", "none", "fake":
	default:
		return fmt.Errorf("telemetry: %q: want auto, nvml, smi, none or fake", c.Telemetry)
	}
	if c.GPUMemBytes < 0 || c.MemMarginBytes < 0 {
		return errors.New("gpu_mem_bytes and mem_margin_bytes must not be negative")
	}
	ct := c.Container
	if ct.Engine != "docker" && ct.Engine != "podman" {
		return fmt.Errorf("container.engine: %q: want docker or podman", ct.Engine)
	}
	if c.Backend == BackendContainer {
		if ct.Image == "" {
			return errors.New("container.image: required by the container backend")
		}
		if !safeImage(ct.Image) {
			return fmt.Errorf("container.image: %q: not a plain image reference", ct.Image)
		}
		if ct.Runtime != "" && !dispatch.SafeName(ct.Runtime) {
			return fmt.Errorf("container.runtime: %q: use letters, digits, '.', '_' and '-'", ct.Runtime)
		}
		if !strings.HasPrefix(ct.MountPoint, "/") {
			return fmt.Errorf("container.mount_point: %q: must be absolute", ct.MountPoint)
		}
		for i, u := range ct.Ulimits {
			if !safeUlimit(u) {
				return fmt.Errorf("container.ulimits[%d]: %q: want name=soft[:hard]", i, u)
			}
		}
	}
	if err := c.Slurm.Validate(); err != nil {
		return err
	}
	if err := c.Kubernetes.validate(); err != nil {
		return err
	}
	return c.Fake.validate()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// readCatalog returns min_sub_batch per model from workloads/catalog.json; empty when the
// file is absent or unreadable (defaults apply then).
func readCatalog(path string) map[string]int {
	out := map[string]int{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var cat struct {
		Models map[string]struct {
			MinSubBatch int `json:"min_sub_batch"`
		} `json:"models"`
	}
	if json.Unmarshal(data, &cat) != nil {
		return out
	}
	for name, m := range cat.Models {
		out[name] = m.MinSubBatch
	}
	return out
}

// subBatches returns the sub-batches of m for batch b, largest first.
func (m *ModelSpec) subBatches(b, levels int) []int {
	var out []int
	if len(m.SubBatches) > 0 {
		for _, s := range m.SubBatches {
			if s <= b && b%s == 0 {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		slices.Reverse(out)
		return out
	}
	s := b
	for i := 0; i < levels && s >= max(m.MinSubBatch, 1); i++ {
		out = append(out, s)
		if s%2 != 0 {
			break
		}
		s /= 2
	}
	if len(out) == 0 {
		out = []int{b} // b itself is below min_sub_batch: measure it anyway
	}
	return out
}

// Member is one workload configuration inside a cell.
type Member struct {
	Model    string `json:"model"`
	Batch    int    `json:"batch"`
	SubBatch int    `json:"sub_batch"`
	// GPUs is the job's GPU count (processes); 0 and 1 both mean one.
	GPUs      int      `json:"gpus,omitempty"`
	SeqLen    int      `json:"seq_len,omitempty"`
	ImageSize int      `json:"image_size,omitempty"`
	Args      []string `json:"args,omitempty"`
}

// Config returns the profile configuration of m.
func (m Member) Config() profile.Config {
	return profile.Config{Model: m.Model, Batch: m.Batch, SubBatch: m.SubBatch}
}

// NGPUs returns the job's GPU count, at least 1.
func (m Member) NGPUs() int { return max(m.GPUs, 1) }

// String formats m as model/batch/sub-batch, with "x<n>" for jobs of n > 1 GPUs.
func (m Member) String() string {
	if m.NGPUs() > 1 {
		return m.Config().String() + "x" + strconv.Itoa(m.GPUs)
	}
	return m.Config().String()
}

// Cell kinds.
const (
	KindSolo = "solo"
	KindPair = "pair"
)

// Cell is the unit of work: one configuration measured alone (KindSolo) or two measured
// together under a sharing mode (KindPair), with all its repeats. Its ID is derived from its
// content and from the campaign settings that affect measurements, so it is stable across
// reruns and machines and changes when anything that matters changes. Dispatchers (Slurm,
// Kubernetes) address cells by Index within a resolved campaign and recognise finished ones
// by ID.
type Cell struct {
	Index int     `json:"index"`
	ID    string  `json:"id"`
	Kind  string  `json:"kind"`
	A     Member  `json:"a"`
	B     *Member `json:"b,omitempty"`
	// Mode is the sharing mode of a pair cell (timeslice or mps).
	Mode string `json:"mode,omitempty"`
	// Label is human-readable: "resnet50/64/32", "resnet50/64/32+vgg16/32/32" or, under MPS,
	// "resnet50/64/32+vgg16/32/32@mps".
	Label string `json:"label"`
	// Level is the sub-batch level (0: b = B; the larger of a pair's), for order: levels.
	Level int `json:"level,omitempty"`
}

// Dir is the cell's directory name under DIR/cells: file-system and shell safe.
func (c Cell) Dir() string {
	r := strings.NewReplacer("/", "_", "+", "__", "@", "_")
	return fmt.Sprintf("%03d-%s-%s", c.Index, r.Replace(c.Label), c.ID[:8])
}

// SameConfig reports whether a pair cell co-locates a configuration with itself.
func (c Cell) SameConfig() bool {
	return c.B != nil && c.A.Config() == c.B.Config() && c.A.NGPUs() == c.B.NGPUs()
}

// GPUs returns the number of GPUs the cell occupies.
func (c Cell) GPUs() int { return c.A.NGPUs() }

// maxGPUs returns the largest GPU count of the campaign's jobs (at least 1): what a cluster
// task asks for, so that every cell fits in any task.
func (c *Campaign) maxGPUs() int {
	n := 1
	for _, m := range c.Models {
		for _, g := range m.GPUs {
			n = max(n, g)
		}
	}
	return n
}

// memberSet is one model's configurations, with each one's sub-batch level within its batch.
type memberSet struct {
	members []Member
	levels  []int
}

// memberSets returns the configurations of every model, by name.
func (c *Campaign) memberSets() map[string]memberSet {
	per := map[string]memberSet{}
	for i := range c.Models {
		m := &c.Models[i]
		var x memberSet
		for _, g := range m.GPUs {
			for _, b := range m.Batches {
				for lvl, s := range m.subBatches(b, c.SubBatchLevels) {
					gpus := g
					if g == 1 {
						gpus = 0 // one GPU is the default: omitted from IDs and labels
					}
					x.members = append(x.members, Member{Model: m.Name, Batch: b, SubBatch: s, GPUs: gpus, SeqLen: m.SeqLen, ImageSize: m.ImageSize, Args: m.Args})
					x.levels = append(x.levels, lvl)
				}
			}
		}
		per[m.Name] = x
	}
	return per
}

// pairable reports whether configurations i of a and j of b form a pair cell of model pair
// p: the same GPU count, each unordered pair of one model's configurations once, and under
// the matched grid only equal levels.
func (c *Campaign) pairable(p [2]string, a, b memberSet, i, j int) bool {
	if a.members[i].NGPUs() != b.members[j].NGPUs() {
		return false
	}
	if p[0] == p[1] && j < i {
		return false
	}
	return c.PairGrid != GridMatched || a.levels[i] == b.levels[j] && (p[0] != p[1] || i == j)
}

// CellCount returns the numbers of solo and pair cells without building them, so that
// Resolve can refuse absurd campaigns before they take the memory.
func (c *Campaign) CellCount() (solo, pair int) {
	per := c.memberSets()
	for _, x := range per {
		solo += len(x.members)
	}
	if c.SoloOnly {
		return solo, 0
	}
	for _, p := range c.pairList() {
		a, b := per[p[0]], per[p[1]]
		for i := range a.members {
			for j := range b.members {
				if c.pairable(p, a, b, i, j) {
					pair++
				}
			}
			if pair > MaxCells {
				return solo, pair // enough to refuse
			}
		}
	}
	return solo, pair * len(c.Modes)
}

// Cells expands c into its cells: solo cells first (models, GPU counts, batches and
// sub-batches in campaign order, sub-batches largest first), then pair cells (for each mode),
// or by sub-batch level with Order levels. The order is the execution order and defines
// Index.
func (c *Campaign) Cells() []Cell {
	per := c.memberSets()
	var cells []Cell
	for i := range c.Models {
		x := per[c.Models[i].Name]
		for k, m := range x.members {
			cells = append(cells, Cell{Kind: KindSolo, A: m, Level: x.levels[k]})
		}
	}
	if !c.SoloOnly {
		for _, mode := range c.Modes {
			for _, p := range c.pairList() {
				a, b := per[p[0]], per[p[1]]
				for i, ma := range a.members {
					for j, mb := range b.members {
						if !c.pairable(p, a, b, i, j) {
							continue
						}
						mb := mb
						cells = append(cells, Cell{Kind: KindPair, A: ma, B: &mb, Mode: mode, Level: max(a.levels[i], b.levels[j])})
					}
				}
			}
		}
	}
	if c.Order == OrderLevels {
		slices.SortStableFunc(cells, func(x, y Cell) int {
			return cmp.Or(modeRank(x)-modeRank(y), x.Level-y.Level, kindRank(x.Kind)-kindRank(y.Kind))
		})
	}
	for i := range cells {
		cells[i].Index = i
		cells[i].Label = cells[i].A.String()
		if cells[i].B != nil {
			cells[i].Label += "+" + cells[i].B.String()
			if cells[i].Mode != string(profile.Timeslice) {
				cells[i].Label += "@" + cells[i].Mode
			}
		}
		cells[i].ID = c.cellID(cells[i])
	}
	return cells
}

// modeRank puts solo cells and time-slicing pairs before the pairs of other sharing modes under
// order: levels: a budget that runs out then leaves the time-slicing profile whole, and the MPS
// levels, which need workers of their own, come last.
func modeRank(cell Cell) int {
	if cell.Kind == KindSolo || cell.Mode == string(profile.Timeslice) {
		return 0
	}
	return 1
}

func kindRank(kind string) int {
	if kind == KindSolo {
		return 0
	}
	return 1
}

// pairList returns the model pairs: the configured ones, or all unordered pairs plus each
// model with itself.
func (c *Campaign) pairList() [][2]string {
	var out [][2]string
	if len(c.Pairs) > 0 {
		for _, p := range c.Pairs {
			out = append(out, [2]string{p[0], p[1]})
		}
		return out
	}
	for i := range c.Models {
		for j := i; j < len(c.Models); j++ {
			out = append(out, [2]string{c.Models[i].Name, c.Models[j].Name})
		}
	}
	return out
}

// cellID hashes the cell with every campaign setting that changes what is measured (not
// paths, timeouts, GPUs, telemetry, budget or order).
func (c *Campaign) cellID(cell Cell) string {
	w := c.Workload
	key := struct {
		V          int
		Kind       string
		A          Member
		B          *Member
		Mode       string
		Backend    string
		Seed       int64
		Repeats    int
		MaxRepeats int
		CITarget   float64
		ReuseSolo  bool
		Warmup     Warmup
		Window     Window
		Device     string
		Tiny       bool
		Threads    int
		MemFrac    float64
		AMP        string
		Precision  string
		Impl       string
		MaxSteps   int
		Args       []string
		Env        map[string]string
		Image      string
		Fake       *FakeConfig
		// Workers is set for warm workers only, so the IDs of fresh-process campaigns stay.
		Workers string `json:",omitempty"`
	}{
		V: 2, Kind: cell.Kind, A: cell.A, B: cell.B, Mode: cell.Mode, Backend: c.Backend, Seed: c.Seed,
		Repeats: c.Repeats, MaxRepeats: c.MaxRepeats, CITarget: c.CITarget, ReuseSolo: c.ReuseSolo, Warmup: c.Warmup, Window: c.Window,
		Device: w.Device, Tiny: w.Tiny, Threads: w.Threads, MemFrac: w.MemFraction, AMP: w.AMP, Precision: w.Precision,
		Impl: w.Impl, MaxSteps: w.MaxSteps, Args: w.Args, Env: w.Env,
	}
	if cell.Kind == KindSolo {
		key.ReuseSolo = false // a solo cell measures the same either way
	}
	if c.Workers == WorkersWarm {
		key.Workers = c.Workers
	}
	if c.Backend == BackendContainer {
		key.Image = c.Container.Image
	}
	if c.Backend == BackendFake {
		f := c.Fake
		key.Fake = &f
	}
	b, err := json.Marshal(key) // maps marshal with sorted keys
	if err != nil {
		panic("runner: cell key does not marshal: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// CellByIndex returns the cell with the given index.
func (c *Campaign) CellByIndex(index int) (Cell, error) {
	cells := c.Cells()
	if index < 0 || index >= len(cells) {
		return Cell{}, fmt.Errorf("runner: campaign %s: cell index %d out of range [0, %d)", c.Name, index, len(cells))
	}
	return cells[index], nil
}
