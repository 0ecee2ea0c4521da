package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharebench/sharebench/internal/golden"
)

const specBase = `name: X
profiles:
  p: {file: prof.json, model_map: map.csv}
traces:
  a: {file: data:traces/a.csv}
  g: {generate: {jobs: 100, load: 1, pool: pool.csv}}
cluster: {nodes: 2, gpus_per_node: 4, gpu_mem_gib: 16}
`

// TestSpecGrid checks the expansion of a grid: cells in axis order (first axis slowest), their
// names, labels and fields, and paths relative to the spec's directory.
func TestSpecGrid(t *testing.T) {
	spec := specBase + `grid:
  trace: [a]
  gpu_mem_gib: [8, 16]
  interval_s: [0, 150]
policies: [fifo, {name: never, policy: 'sjf{"preempt":false}', variant: true}]
seeds: {from: 3, count: 2}
baselines: [fifo]
`
	e, err := ParseSpec(strings.NewReader(spec), "x.yaml", FileResolver("/specs"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range e.Settings {
		got = append(got, fmt.Sprintf("%s mem=%g iv=%v params=%v", s.Name, s.Cluster.MemGiB, s.Interval, s.Params))
	}
	want := []string{
		"a-gpu_mem_gib8-interval_s0 mem=8 iv=0s params=[{gpu_mem_gib 8} {interval_s 0}]",
		"a-gpu_mem_gib8-interval_s150 mem=8 iv=2m30s params=[{gpu_mem_gib 8} {interval_s 150}]",
		"a-gpu_mem_gib16-interval_s0 mem=16 iv=0s params=[{gpu_mem_gib 16} {interval_s 0}]",
		"a-gpu_mem_gib16-interval_s150 mem=16 iv=2m30s params=[{gpu_mem_gib 16} {interval_s 150}]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("settings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := e.Settings[0].Profile.File; p != filepath.Join("/specs", "prof.json") {
		t.Errorf("profile path %q, want it relative to the spec's directory", p)
	}
	if tr := e.Settings[0].Trace.File; tr != "data:traces/a.csv" {
		t.Errorf("trace path %q, want the data: name kept", tr)
	}
	if len(e.Seeds) != 2 || e.Seeds[0] != 3 || e.Seeds[1] != 4 || len(e.Series) != 2 || !e.Series[1].Variant {
		t.Errorf("seeds %v, series %+v", e.Seeds, e.Series)
	}
	// A load axis sets the generator's target and names cells by the template.
	e, err = ParseSpec(strings.NewReader(specBase+"grid:\n  load: [0.5, 2]\nsetting_name: \"l{load}\"\ntraces2: 1\n"), "x.yaml", FileResolver("/"))
	if err == nil {
		t.Fatalf("unknown top-level key accepted")
	}
	e, err = ParseSpec(strings.NewReader(specBase+"grid:\n  trace: [g]\n  load: [0.5, 2]\nsetting_name: \"l{load}\"\npolicies: [fifo]\n"), "x.yaml", FileResolver("/"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Settings[1].Name != "l2" || e.Settings[1].Trace.Gen.Load != 2 || e.Settings[1].Params[0] != (Param{"load", "2"}) {
		t.Errorf("load cell %+v", e.Settings[1])
	}
}

// TestSpecErrors pins the one-line, positioned errors of broken specs (-update rewrites
// testdata/spec-errors.txt).
func TestSpecErrors(t *testing.T) {
	cases := []struct{ name, spec string }{
		{"not yaml", "name: [\n"},
		{"empty", ""},
		{"unknown key", specBase + "polices: [fifo]\n"},
		{"bad type", specBase + "seeds: one\n"},
		{"no name", strings.Replace(specBase, "name: X\n", "", 1) + "settings: [{trace: a}]\npolicies: [fifo]\n"},
		{"no settings", specBase + "policies: [fifo]\n"},
		{"no policies", specBase + "settings: [{trace: a}]\n"},
		{"unknown trace", specBase + "settings:\n  - {name: s, trace: b}\npolicies: [fifo]\n"},
		{"unknown axis", specBase + "grid:\n  memory: [8]\npolicies: [fifo]\n"},
		{"axis not a list", specBase + "grid:\n  trace: a\npolicies: [fifo]\n"},
		{"bad axis value", specBase + "grid:\n  trace: [a]\n  nodes: [two]\npolicies: [fifo]\n"},
		{"bad placeholder", specBase + "grid:\n  trace: [a]\nsetting_name: \"{memory}\"\npolicies: [fifo]\n"},
		{"load on a file", specBase + "grid:\n  trace: [a]\n  load: [1]\npolicies: [fifo]\n"},
		{"policy name", specBase + "settings: [{trace: a}]\npolicies: ['sjf{\"preempt\":false}']\n"},
		{"unknown baseline", specBase + "settings: [{trace: a}]\npolicies: [fifo]\nbaselines: [sjf]\n"},
		{"too many seeds", specBase + "settings: [{trace: a}]\npolicies: [fifo]\nseeds: {from: 1, count: 5000}\n"},
		{"trace twice", specBase + "settings:\n  - {name: s, trace: a}\n  - {name: s, trace: a}\npolicies: [fifo]\n"},
		{"no cluster", strings.Replace(specBase, "cluster: {nodes: 2, gpus_per_node: 4, gpu_mem_gib: 16}\n", "", 1) + "settings: [{trace: a}]\npolicies: [fifo]\n"},
		{"bad curve", specBase + "settings: [{trace: a}]\npolicies: [fifo]\nanalysis: {curve_x: memory}\n"},
		{"file and generate", strings.Replace(specBase, "a: {file: data:traces/a.csv}", "a: {file: a.csv, generate: {jobs: 1, load: 1, pool: p}}", 1) + "settings: [{trace: a}]\npolicies: [fifo]\n"},
		{"unknown setting key", specBase + "settings:\n  - {trace: a, memory: 8}\npolicies: [fifo]\n"},
		{"unknown policy key", specBase + "settings: [{trace: a}]\npolicies:\n  - {name: f, polcy: fifo}\n"},
		{"unknown trace key", strings.Replace(specBase, "a: {file: data:traces/a.csv}", "a: {fil: x.csv}", 1) + "settings: [{trace: a}]\npolicies: [fifo]\n"},
		{"unknown derivation", strings.Replace(specBase, "model_map: map.csv}", "model_map: map.csv, derive: subbatch+mirror}", 1) + "settings: [{trace: a}]\npolicies: [fifo]\n"},
		{"permuted generator", strings.Replace(specBase, "pool: pool.csv}}", "pool: pool.csv}, permute_models: true}", 1) + "settings: [{trace: g}]\npolicies: [fifo]\n"},
		{"max_share out of range", specBase + "settings: [{trace: a}]\npolicies:\n  - {name: f, policy: sjf-bsbf, max_share: 17}\n"},
	}
	var b strings.Builder
	for _, c := range cases {
		_, err := ParseSpec(strings.NewReader(c.spec), "x.yaml", FileResolver("/"))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error on several lines: %q", c.name, err)
		}
		fmt.Fprintf(&b, "%s: %v\n", c.name, err)
	}
	golden.Check(t, "testdata/spec-errors.txt", []byte(b.String()))
}

// TestShippedSpecs parses every shipped spec: each names itself after its file.
func TestShippedSpecs(t *testing.T) {
	for _, label := range Labels() {
		for _, e := range Experiments(label) {
			if e.Title == "" {
				t.Errorf("%s/%s: no title", label, e.Name)
			}
		}
	}
}

// TestDocumentedSpec parses the complete example of docs/experiments.md, so that the
// documentation cannot describe a format the parser rejects.
func TestDocumentedSpec(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "experiments.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A complete example\n\n```yaml\n")
	if !ok {
		t.Fatal("docs/experiments.md: no yaml block under \"A complete example\"")
	}
	spec, _, _ := strings.Cut(rest, "```")
	e, err := ParseSpec(strings.NewReader(spec), "docs/experiments.md", FileResolver("/specs"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanOf([]Experiment{e})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 120 || len(e.Settings) != 4 {
		t.Errorf("%d runs in %d settings, the doc says 120 in 4", len(plan), len(e.Settings))
	}
	if got := e.Settings[0].Name; got != "trace3-mem12" {
		t.Errorf("first setting %q", got)
	}
}

// TestXiScaleZero checks that xi_scale 0 (no interference) is a scale of its own, not the
// unset default: its profile has every ξ at 1, while 1 keeps the measured slowdowns.
func TestXiScaleZero(t *testing.T) {
	spec := specBase + "grid:\n  trace: [a]\n  xi_scale: [0, 1]\npolicies: [sjf-bsbf]\n"
	spec = strings.Replace(spec, "file: prof.json", "file: repo:results/profiles/gavel-v100.json", 1)
	e, err := ParseSpec(strings.NewReader(spec), "x.yaml", FileResolver("/specs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Settings) != 2 {
		t.Fatalf("%d settings, want 2", len(e.Settings))
	}
	in := NewInputs(testEnv(t))
	var above1 []int
	for _, s := range e.Settings {
		if s.Profile.XiScale == nil {
			t.Fatalf("setting %s: xi_scale unset", s.Name)
		}
		p, err := in.Profile(s.Profile)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, pr := range p.Pairs {
			if pr.Xi > 1 {
				n++
			}
		}
		above1 = append(above1, n)
		t.Logf("xi_scale %g: %d of %d pairs slowed", *s.Profile.XiScale, n, len(p.Pairs))
	}
	if above1[0] != 0 || above1[1] == 0 {
		t.Errorf("pairs with ξ > 1: %d at scale 0 (want 0), %d at scale 1 (want > 0)", above1[0], above1[1])
	}
}
