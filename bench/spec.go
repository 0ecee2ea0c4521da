package bench

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/sim"
)

// An experiment spec is one YAML document describing an experiment: its traces, profiles,
// cluster, a grid of settings (or an explicit list), the compared policies, seeds, the
// baselines of its Δ tables and the tables and figures to draw. docs/experiments.md documents
// the format; the paper's experiments are the spec files in bench/experiments/.

// specDoc is the YAML form of an experiment.
type specDoc struct {
	Name      string                 `yaml:"name"`
	Title     string                 `yaml:"title"`
	Profiles  map[string]specProfile `yaml:"profiles"`
	Profile   string                 `yaml:"profile"`
	Traces    map[string]specTrace   `yaml:"traces"`
	Cluster   specCluster            `yaml:"cluster"`
	IntervalS float64                `yaml:"interval_s"`
	// Engine options for every setting (a setting or grid axis may override them).
	RestartCost        string        `yaml:"restart_cost"`
	IterTimeScale      float64       `yaml:"iter_time_scale"`
	OverheadEveryEvent bool          `yaml:"overhead_every_event"`
	Grid               yaml.Node     `yaml:"grid"`
	SettingName        string        `yaml:"setting_name"`
	Settings           []specSetting `yaml:"settings"`
	Policies           []specPolicy  `yaml:"policies"`
	Seeds              specSeeds     `yaml:"seeds"`
	Baselines          []string      `yaml:"baselines"`
	Keep               Keep          `yaml:"keep"`
	Analysis           specAnalysis  `yaml:"analysis"`
}

type specProfile struct {
	File     string   `yaml:"file"`
	ModelMap string   `yaml:"model_map"`
	Derive   string   `yaml:"derive"`
	XiScale  *float64 `yaml:"xi_scale"`
}

type specTrace struct {
	File          string   `yaml:"file"`
	Format        string   `yaml:"format"`
	Generate      *GenSpec `yaml:"generate"`
	LoadScale     float64  `yaml:"load_scale"`
	PermuteModels bool     `yaml:"permute_models"`
}

type specCluster struct {
	Nodes       int     `yaml:"nodes"`
	GPUsPerNode int     `yaml:"gpus_per_node"`
	MemGiB      float64 `yaml:"gpu_mem_gib"`
}

// specSetting is one explicit setting, or the values of one cell of the grid. Unset fields
// take the experiment's values.
type specSetting struct {
	Name           string   `yaml:"name"`
	Trace          string   `yaml:"trace"`
	Profile        string   `yaml:"profile"`
	Nodes          int      `yaml:"nodes"`
	GPUsPerNode    int      `yaml:"gpus_per_node"`
	MemGiB         float64  `yaml:"gpu_mem_gib"`
	IntervalS      *float64 `yaml:"interval_s"`
	Load           float64  `yaml:"load"`
	XiScale        *float64 `yaml:"xi_scale"`
	DropOversized  bool     `yaml:"drop_oversized"`
	LoadCandidates []int    `yaml:"load_candidates"`
	// Engine options: the restart cost and the Muri lineage's effects.
	RestartCost        string            `yaml:"restart_cost"`
	IterTimeScale      float64           `yaml:"iter_time_scale"`
	OverheadEveryEvent *bool             `yaml:"overhead_every_event"`
	Labels             map[string]string `yaml:"labels"`
	line               int
}

// UnmarshalYAML records the setting's line and rejects unknown keys.
func (s *specSetting) UnmarshalYAML(n *yaml.Node) error {
	if err := checkKeys(n, "name", "trace", "profile", "nodes", "gpus_per_node", "gpu_mem_gib", "interval_s",
		"load", "xi_scale", "drop_oversized", "load_candidates", "labels", "restart_cost", "iter_time_scale",
		"overhead_every_event"); err != nil {
		return err
	}
	type plain specSetting
	var q plain
	if err := n.Decode(&q); err != nil {
		return err
	}
	*s = specSetting(q)
	s.line = n.Line
	return nil
}

// specPolicy is a compared series: a policy spec, shown under a name.
type specPolicy struct {
	Name     string `yaml:"name"`
	Policy   string `yaml:"policy"`
	Variant  bool   `yaml:"variant"`
	MaxShare int    `yaml:"max_share"`
}

// UnmarshalYAML accepts a plain policy name as well as the mapping form.
func (p *specPolicy) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		p.Name, p.Policy = n.Value, n.Value
		return nil
	}
	if err := checkKeys(n, "name", "policy", "variant", "max_share"); err != nil {
		return err
	}
	type plain specPolicy
	var q plain
	if err := n.Decode(&q); err != nil {
		return err
	}
	*p = specPolicy(q)
	if p.Policy == "" {
		p.Policy = p.Name
	}
	return nil
}

// specSeeds is a list of seeds, or a range {from, count}.
type specSeeds []uint64

// UnmarshalYAML accepts [1, 2, 3] or {from: 1, count: 10}.
func (s *specSeeds) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var l []uint64
		if err := n.Decode(&l); err != nil {
			return err
		}
		*s = l
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: seeds: want a list of seeds or {from: N, count: N}", n.Line)
	}
	if err := checkKeys(n, "from", "count"); err != nil {
		return err
	}
	var r struct {
		From  uint64 `yaml:"from"`
		Count int    `yaml:"count"`
	}
	if err := n.Decode(&r); err != nil {
		return err
	}
	if r.Count < 1 || r.Count > maxSeeds {
		return fmt.Errorf("line %d: seeds: count must be in [1, %d]", n.Line, maxSeeds)
	}
	for i := range r.Count {
		*s = append(*s, r.From+uint64(i))
	}
	return nil
}

// maxSeeds and maxRuns bound what one spec may ask for.
const (
	maxSeeds = 1000
	maxRuns  = 100000
)

type specAnalysis struct {
	Claims       bool     `yaml:"claims"`
	PerCell      bool     `yaml:"per_cell"`
	CellSettings []string `yaml:"cell_settings"`
	Jobs         bool     `yaml:"jobs"`
	Bars         bool     `yaml:"bars"`
	CurveX       string   `yaml:"curve_x"`
}

// checkKeys rejects a mapping key outside allowed, at its line.
func checkKeys(n *yaml.Node, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(allowed, k.Value) {
			return fmt.Errorf("line %d: unknown key %q (known: %s)", k.Line, k.Value, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// yamlMessage flattens a yaml error (a TypeError lists several problems) to one line:
// "LINE: message", without the package's prefixes and Go type names.
func yamlMessage(err error) string {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = te.Errors[0]
		if len(te.Errors) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(te.Errors)-1)
		}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "line ")
	if i := strings.Index(msg, " in type "); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.Replace(msg, "field ", "unknown key ", 1)
	msg = strings.Replace(msg, " not found", "", 1)
	if c := strings.IndexByte(msg, ':'); c > 0 {
		if _, err := strconv.Atoi(msg[:c]); err == nil {
			return msg
		}
	}
	return "1: " + msg
}

// gridKeys are the settings fields a grid axis may sweep, with the run label each writes.
var gridKeys = []string{"trace", "profile", "nodes", "gpus_per_node", "gpu_mem_gib", "interval_s", "load", "xi_scale",
	"restart_cost", "iter_time_scale", "overhead_every_event"}

// PathResolver turns a path written in a spec into an input name: "data:" (the public data
// directory) and "repo:" (the sharebench repository) names are kept, anything else is relative
// to the spec file's directory.
type PathResolver func(string) string

// FileResolver resolves relative paths against dir.
func FileResolver(dir string) PathResolver {
	return func(p string) string {
		if p == "" || strings.HasPrefix(p, "data:") || strings.HasPrefix(p, "repo:") || filepath.IsAbs(p) {
			return p
		}
		abs, err := filepath.Abs(filepath.Join(dir, p))
		if err != nil {
			return filepath.Join(dir, p)
		}
		return abs
	}
}

// LoadSpecFile reads an experiment spec; relative paths are relative to its directory.
func LoadSpecFile(path string) (Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Experiment{}, fmt.Errorf("bench: %w", err)
	}
	return ParseSpec(bytes.NewReader(data), path, FileResolver(filepath.Dir(path)))
}

// ParseSpec reads one experiment spec from r; name labels errors ("name:line: message").
func ParseSpec(r io.Reader, name string, resolve PathResolver) (Experiment, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return Experiment{}, fmt.Errorf("bench: %s: %w", name, err)
	}
	if len(data) > 1<<20 {
		return Experiment{}, fmt.Errorf("bench: %s: larger than 1 MiB", name)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Experiment{}, fmt.Errorf("bench: %s:%s", name, yamlMessage(err))
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return Experiment{}, fmt.Errorf("bench: %s:1: want a mapping of keys (name, traces, policies, ...)", name)
	}
	var d specDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return Experiment{}, fmt.Errorf("bench: %s:%s", name, yamlMessage(err))
	}
	p := specParser{name: name, doc: &d, root: root.Content[0], resolve: resolve}
	e, err := p.experiment()
	if err != nil {
		return Experiment{}, err
	}
	if err := e.Validate(); err != nil {
		return Experiment{}, fmt.Errorf("bench: %s:1: %s", name, strings.TrimPrefix(err.Error(), "bench: "))
	}
	return e, nil
}

type specParser struct {
	name    string
	doc     *specDoc
	root    *yaml.Node
	resolve PathResolver
}

// errAt formats an error at the line of the top-level key (or the given line when > 0).
func (p *specParser) errAt(line int, key, format string, args ...any) error {
	if line <= 0 {
		line = p.keyLine(key)
	}
	return fmt.Errorf("bench: %s:%d: %s", p.name, line, fmt.Sprintf(format, args...))
}

// keyLine returns the line of a top-level key, or 1.
func (p *specParser) keyLine(key string) int {
	for i := 0; i+1 < len(p.root.Content); i += 2 {
		if p.root.Content[i].Value == key {
			return p.root.Content[i].Line
		}
	}
	return 1
}

func (p *specParser) experiment() (Experiment, error) {
	d := p.doc
	if d.Name == "" {
		return Experiment{}, p.errAt(1, "", "missing name")
	}
	e := Experiment{Name: d.Name, Title: d.Title, Keep: d.Keep}
	profiles := map[string]ProfileSpec{}
	for name, sp := range d.Profiles {
		if sp.File == "" {
			return Experiment{}, p.errAt(0, "profiles", "profile %s: missing file", name)
		}
		if sp.Derive != "" {
			for _, d := range strings.Split(sp.Derive, "+") {
				if d != DeriveSubBatch && d != DeriveSymmetric {
					return Experiment{}, p.errAt(0, "profiles", "profile %s: unknown derivation %q (known: %s, %s, joined by +)", name, d, DeriveSubBatch, DeriveSymmetric)
				}
			}
		}
		profiles[name] = ProfileSpec{File: p.resolve(sp.File), ModelMap: p.resolve(sp.ModelMap), Derive: sp.Derive, XiScale: sp.XiScale}
	}
	defProfile := d.Profile
	if defProfile == "" && len(profiles) == 1 {
		for k := range profiles {
			defProfile = k
		}
	}
	if defProfile != "" {
		if _, ok := profiles[defProfile]; !ok {
			return Experiment{}, p.errAt(0, "profile", "unknown profile %q (define it under profiles)", defProfile)
		}
	}
	traces := map[string]TraceSpec{}
	for name, st := range d.Traces {
		ts := TraceSpec{Name: name, File: p.resolve(st.File), Format: st.Format, Gen: st.Generate, LoadScale: st.LoadScale,
			PermuteModels: st.PermuteModels}
		if ts.Gen != nil {
			g := *ts.Gen
			g.Pool = p.resolve(g.Pool)
			ts.Gen = &g
		}
		if (ts.File == "") == (ts.Gen == nil) {
			return Experiment{}, p.errAt(0, "traces", "trace %s: give exactly one of file and generate", name)
		}
		if ts.PermuteModels && (ts.Gen != nil || ts.Format == "philly") {
			return Experiment{}, p.errAt(0, "traces", "trace %s: permute_models applies to trace files with models (a generated trace and the Philly table draw theirs per seed)", name)
		}
		traces[name] = ts
	}
	// Settings: the grid's cells, then the explicit ones.
	cells, err := p.gridCells()
	if err != nil {
		return Experiment{}, err
	}
	seen := map[string]bool{}
	for _, s := range append(cells, d.Settings...) {
		set, err := p.setting(s, traces, profiles, defProfile)
		if err != nil {
			return Experiment{}, err
		}
		if seen[set.Name] {
			return Experiment{}, p.errAt(s.line, "settings", "setting %s twice", set.Name)
		}
		seen[set.Name] = true
		e.Settings = append(e.Settings, set)
	}
	if len(e.Settings) == 0 {
		return Experiment{}, p.errAt(1, "", "no settings: give a grid or settings")
	}
	for _, sp := range d.Policies {
		if sp.Policy == "" {
			return Experiment{}, p.errAt(0, "policies", "a policy without a spec")
		}
		if !validName(sp.Name) {
			return Experiment{}, p.errAt(0, "policies", "policy %q: give it a name of letters, digits, '.', '-' and '_' (name: ..., policy: ...)", sp.Policy)
		}
		if sp.MaxShare < 0 || sp.MaxShare > cluster.MaxShare {
			return Experiment{}, p.errAt(0, "policies", "policy %s: max_share must be in [1, %d]", sp.Name, cluster.MaxShare)
		}
		e.Series = append(e.Series, Series{Name: sp.Name, Policy: sp.Policy, Variant: sp.Variant, MaxShare: sp.MaxShare})
	}
	if len(e.Series) == 0 {
		return Experiment{}, p.errAt(1, "", "no policies")
	}
	e.Seeds = slices.Clone(d.Seeds)
	if len(e.Seeds) == 0 {
		e.Seeds = []uint64{1}
	}
	if len(e.Seeds) > maxSeeds {
		return Experiment{}, p.errAt(0, "seeds", "more than %d seeds", maxSeeds)
	}
	if n := len(e.Settings) * len(e.Series) * len(e.Seeds); n > maxRuns {
		return Experiment{}, p.errAt(1, "", "%d runs (settings × policies × seeds): more than %d", n, maxRuns)
	}
	for _, b := range d.Baselines {
		if !slices.ContainsFunc(e.Series, func(s Series) bool { return s.Name == b }) {
			return Experiment{}, p.errAt(0, "baselines", "baseline %q is not one of the policies", b)
		}
	}
	a := d.Analysis
	e.Analysis = Analysis{Baselines: slices.Clone(d.Baselines), Claims: a.Claims, PerCell: a.PerCell,
		CellSettings: a.CellSettings, Jobs: a.Jobs, Bars: a.Bars, CurveX: a.CurveX}
	if a.CurveX != "" && !slices.Contains(gridKeys[1:], a.CurveX) {
		return Experiment{}, p.errAt(0, "analysis", "curve_x %q: want one of %s", a.CurveX, strings.Join(gridKeys[1:], ", "))
	}
	return e, nil
}

// gridAxis is one axis of a grid: the swept key and its values, in order.
type gridAxis struct {
	key    string
	values []*yaml.Node
}

// gridCells expands the grid (an ordered mapping of axis → values) into settings, the first
// axis varying slowest.
func (p *specParser) gridCells() ([]specSetting, error) {
	g := &p.doc.Grid
	if g.Kind == 0 {
		return nil, nil
	}
	if g.Kind != yaml.MappingNode {
		return nil, p.errAt(g.Line, "", "grid: want a mapping of axis: [values]")
	}
	var axes []gridAxis
	for i := 0; i+1 < len(g.Content); i += 2 {
		k, v := g.Content[i], g.Content[i+1]
		if !slices.Contains(gridKeys, k.Value) {
			return nil, p.errAt(k.Line, "", "grid: unknown axis %q (known: %s)", k.Value, strings.Join(gridKeys, ", "))
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, p.errAt(v.Line, "", "grid: %s: want a non-empty list of values", k.Value)
		}
		axes = append(axes, gridAxis{k.Value, v.Content})
	}
	cells := []specSetting{{Labels: map[string]string{}}}
	for _, a := range axes {
		var next []specSetting
		for _, c := range cells {
			for _, v := range a.values {
				s := c
				s.Labels = maps.Clone(c.Labels)
				s.line = v.Line
				if err := setAxis(&s, a.key, v); err != nil {
					return nil, p.errAt(v.Line, "", "grid: %s: %v", a.key, err)
				}
				if a.key != "trace" {
					s.Labels[a.key] = v.Value
				}
				next = append(next, s)
			}
		}
		cells = next
		if len(cells) > maxRuns {
			return nil, p.errAt(g.Line, "", "grid: more than %d cells", maxRuns)
		}
	}
	for i := range cells {
		name, err := p.cellName(cells[i], axes)
		if err != nil {
			return nil, p.errAt(g.Line, "", "%v", err)
		}
		cells[i].Name = name
	}
	return cells, nil
}

// setAxis sets one swept field of a cell from a scalar node.
func setAxis(s *specSetting, key string, v *yaml.Node) error {
	if v.Kind != yaml.ScalarNode {
		return errors.New("want a scalar value")
	}
	num := func() (float64, error) {
		x, err := strconv.ParseFloat(v.Value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%q is not a number", v.Value)
		}
		return x, nil
	}
	integer := func() (int, error) {
		x, err := strconv.Atoi(v.Value)
		if err != nil || x < 1 {
			return 0, fmt.Errorf("%q is not a positive integer", v.Value)
		}
		return x, nil
	}
	var err error
	switch key {
	case "trace":
		s.Trace = v.Value
	case "profile":
		s.Profile = v.Value
	case "nodes":
		s.Nodes, err = integer()
	case "gpus_per_node":
		s.GPUsPerNode, err = integer()
	case "gpu_mem_gib":
		s.MemGiB, err = num()
	case "interval_s":
		var x float64
		x, err = num()
		s.IntervalS = &x
	case "load":
		s.Load, err = num()
	case "xi_scale":
		var x float64
		x, err = num()
		s.XiScale = &x
	case "restart_cost":
		if _, perr := sim.ParseRestartCost(v.Value); perr != nil && v.Value != "auto" {
			err = perr
		}
		s.RestartCost = v.Value
	case "iter_time_scale":
		s.IterTimeScale, err = num()
	case "overhead_every_event":
		b, perr := strconv.ParseBool(v.Value)
		s.OverheadEveryEvent, err = &b, perr
	}
	return err
}

// cellName names a grid cell: setting_name with {axis} placeholders, or the trace followed by
// axis-value for every other axis (e.g. trace1-gpu_mem_gib16).
func (p *specParser) cellName(s specSetting, axes []gridAxis) (string, error) {
	value := func(k string) string {
		if k == "trace" {
			return s.Trace
		}
		return s.Labels[k]
	}
	if t := p.doc.SettingName; t != "" {
		name := t
		for _, k := range gridKeys {
			name = strings.ReplaceAll(name, "{"+k+"}", value(k))
		}
		if strings.ContainsAny(name, "{}") {
			return "", fmt.Errorf("setting_name %q: unknown placeholder (known: %s)", t, strings.Join(gridKeys, ", "))
		}
		return name, nil
	}
	var parts []string
	if s.Trace != "" {
		parts = append(parts, s.Trace)
	}
	for _, a := range axes {
		if a.key != "trace" {
			parts = append(parts, a.key+value(a.key))
		}
	}
	return strings.Join(parts, "-"), nil
}

// setting turns a cell or explicit setting into a Setting, filling in the experiment's values.
func (p *specParser) setting(s specSetting, traces map[string]TraceSpec, profiles map[string]ProfileSpec, defProfile string) (Setting, error) {
	d := p.doc
	line := s.line
	if line == 0 {
		line = p.keyLine("settings")
	}
	trName := s.Trace
	if trName == "" && len(traces) == 1 {
		for k := range traces {
			trName = k
		}
	}
	if s.Name == "" {
		s.Name = trName
	}
	ts, ok := traces[trName]
	if !ok {
		return Setting{}, p.errAt(line, "", "setting %s: unknown trace %q (define it under traces)", s.Name, trName)
	}
	prName := s.Profile
	if prName == "" {
		prName = defProfile
	}
	ps, ok := profiles[prName]
	if !ok {
		return Setting{}, p.errAt(line, "", "setting %s: unknown profile %q (define it under profiles)", s.Name, prName)
	}
	if s.XiScale != nil {
		ps.XiScale = s.XiScale
	}
	if s.Load != 0 {
		if ts.Gen == nil {
			return Setting{}, p.errAt(line, "", "setting %s: load applies to generated traces only", s.Name)
		}
		g := *ts.Gen
		g.Load = s.Load
		ts.Gen = &g
	}
	c := ClusterSpec{Nodes: d.Cluster.Nodes, GPUsPerNode: d.Cluster.GPUsPerNode, MemGiB: d.Cluster.MemGiB}
	if s.Nodes != 0 {
		c.Nodes = s.Nodes
	}
	if s.GPUsPerNode != 0 {
		c.GPUsPerNode = s.GPUsPerNode
	}
	if s.MemGiB != 0 {
		c.MemGiB = s.MemGiB
	}
	if c.Nodes <= 0 || c.GPUsPerNode <= 0 || !(c.MemGiB > 0) {
		return Setting{}, p.errAt(line, "", "setting %s: the cluster needs nodes, gpus_per_node and gpu_mem_gib > 0", s.Name)
	}
	ivS := d.IntervalS
	if s.IntervalS != nil {
		ivS = *s.IntervalS
	}
	if ivS < 0 || ivS > 1e7 {
		return Setting{}, p.errAt(line, "", "setting %s: interval_s must be in [0, 1e7]", s.Name)
	}
	eng := EngineSpec{RestartCost: d.RestartCost, IterTimeScale: d.IterTimeScale, OverheadEveryEvent: d.OverheadEveryEvent}
	if s.RestartCost != "" {
		eng.RestartCost = s.RestartCost
	}
	if s.IterTimeScale != 0 {
		eng.IterTimeScale = s.IterTimeScale
	}
	if s.OverheadEveryEvent != nil {
		eng.OverheadEveryEvent = *s.OverheadEveryEvent
	}
	if eng.RestartCost == "auto" {
		eng.RestartCost = ""
	}
	if _, err := eng.restart(); err != nil {
		return Setting{}, p.errAt(line, "", "setting %s: %v", s.Name, err)
	}
	if sc := eng.IterTimeScale; sc < 0 || sc > 1e6 {
		return Setting{}, p.errAt(line, "", "setting %s: iter_time_scale must be in (0, 1e6]", s.Name)
	}
	set := Setting{Name: s.Name, Trace: ts, Profile: ps, Cluster: c, Interval: time.Duration(math.Round(ivS * 1e9)),
		DropOversized: s.DropOversized, LoadCandidates: s.LoadCandidates, Engine: eng}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(gridOrder(a), gridOrder(b)), cmp.Compare(a, b)) })
	for _, k := range keys {
		set.Params = append(set.Params, Param{Key: k, Value: s.Labels[k]})
	}
	return set, nil
}

// gridOrder orders label keys as the grid keys, unknown keys last.
func gridOrder(k string) int {
	if i := slices.Index(gridKeys, k); i >= 0 {
		return i
	}
	return len(gridKeys)
}
