package runner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sharebench/sharebench/dispatch"
)

const exampleCampaign = `
name: example
models:
  - name: resnet50
    batches: [64]
  - name: vgg16
    batches: [32]
  - name: bert
    batches: [16]
    seq_len: 128
sub_batch_levels: 2
repeats: 3
max_repeats: 3
warmup: {steps: 20, seconds: 10}
window: {min_steps: 30, min_seconds: 20}
timeouts: {ready: 5m, stall: 90s, grace: 10s}
`

func mustParse(t *testing.T, y string) *Campaign {
	t.Helper()
	c, err := ParseCampaign([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseCampaignDefaults(t *testing.T) {
	t.Parallel()
	c := mustParse(t, exampleCampaign)
	if c.Backend != "local" || len(c.Modes) != 1 || c.Modes[0] != "timeslice" || c.MaxRepeats != 3 || c.CITarget != 0.02 || c.Workload.Python != "python3" || c.Workload.Device != "cuda" ||
		c.Workload.Threads != 2 || c.Window.FloorSteps != 10 || c.Window.Trim != 2 || c.Timeouts.Stall.D().Seconds() != 90 ||
		len(c.GPUs) != 1 || c.GPUs[0] != "0" || c.PairGrid != GridFull {
		t.Errorf("defaults not applied: %+v", c)
	}
	// Resolve is idempotent.
	before := c.Cells()
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, c.Cells()); diff != "" {
		t.Errorf("Resolve changed the cells:\n%s", diff)
	}
}

func TestCampaignEnvOverride(t *testing.T) {
	t.Parallel()
	c := mustParse(t, exampleCampaign)
	c.ApplyEnv(func(k string) string {
		if k == EnvPython {
			return "/opt/py/bin/python3"
		}
		return ""
	})
	if c.Workload.Python != "/opt/py/bin/python3" {
		t.Errorf("python = %q", c.Workload.Python)
	}
}

func TestCampaignValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: x\nmodels: [{name: a, batches: [8]}]\nrepeat: 3\n", "field repeat not found"},
		{"unknown nested field", "name: x\nmodels: [{name: a, batches: [8], batch: 4}]\n", "field batch not found"},
		{"no name", "models: [{name: a, batches: [8]}]\n", "name: missing"},
		{"bad name", "name: 'a b'\nmodels: [{name: a, batches: [8]}]\n", "name: \"a b\""},
		{"no models", "name: x\n", "models: none given"},
		{"unsafe model name", "name: x\nmodels: [{name: 'a;rm', batches: [8]}]\n", "models[0].name"},
		{"duplicate model", "name: x\nmodels: [{name: a, batches: [8]}, {name: a, batches: [4]}]\n", "models[1].name: duplicate"},
		{"no batches", "name: x\nmodels: [{name: a}]\n", "models[0].batches: none given"},
		{"negative batch", "name: x\nmodels: [{name: a, batches: [8, -1]}]\n", "models[0].batches[1]"},
		{"sub-batch divides nothing", "name: x\nmodels: [{name: a, batches: [8], sub_batches: [3]}]\n", "models[0].sub_batches: none divides batch 8"},
		{"default batch", "name: x\nmodels: [{name: a, batches: [8], default_batch: 16}]\n", "models[0].default_batch"},
		{"pair of unknown model", "name: x\nmodels: [{name: a, batches: [8]}]\npairs: [[a, b]]\n", "pairs[0]: unknown model \"b\""},
		{"pair of three", "name: x\nmodels: [{name: a, batches: [8]}]\npairs: [[a, a, a]]\n", "pairs[0]: want two"},
		{"duplicate pair", "name: x\nmodels: [{name: a, batches: [8]}, {name: b, batches: [8]}]\npairs: [[a, b], [b, a]]\n", "pairs[1]: duplicate"},
		{"old mode field", "name: x\nmode: mps\nmodels: [{name: a, batches: [8]}]\n", "field mode not found"},
		{"unknown mode", "name: x\nmodes: [shared]\nmodels: [{name: a, batches: [8]}]\n", "modes[0]"},
		{"duplicate mode", "name: x\nmodes: [mps, mps]\nmodels: [{name: a, batches: [8]}]\n", "modes[1]: duplicate"},
		{"fractional repeats", "name: x\nrepeats: 1.5\nmodels: [{name: a, batches: [8]}]\n", "line 2: repeats: 1.5 is not an integer"},
		{"fractional batch", "name: x\nmodels: [{name: a, batches: [8, 2.5]}]\n", "line 2: models[0].batches[1]: 2.5 is not an integer"},
		{"float bytes", "name: x\ngpu_mem_bytes: 8e9\nmodels: [{name: a, batches: [8]}]\n", "gpu_mem_bytes: 8e9 is not an integer"},
		{"fake memory", "name: x\nmodels: [{name: a, batches: [8]}]\nfake: {mem_bytes: {a: 1.5}}\n", "fake.mem_bytes.a: 1.5 is not an integer"},
		{"max repeats", "name: x\nrepeats: 4\nmax_repeats: 3\nmodels: [{name: a, batches: [8]}]\n", "max_repeats 3"},
		{"ci target", "name: x\nci_target: 2\nmodels: [{name: a, batches: [8]}]\n", "ci_target"},
		{"gpu count", "name: x\nmodels: [{name: a, batches: [8], gpus: [0]}]\n", "models[0].gpus[0]"},
		{"precision", "name: x\nmodels: [{name: a, batches: [8]}]\nworkload: {precision: fp16}\n", "workload.precision"},
		{"order", "name: x\norder: random\nmodels: [{name: a, batches: [8]}]\n", "order"},
		{"too many cells", "name: x\nsub_batch_levels: 16\nmodels: [{name: a, batches: [65536, 32768, 16384, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2], min_sub_batch: 1}, {name: b, batches: [65536, 32768, 16384, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2], min_sub_batch: 1}]\n", "more than 20000"},
		{"backend", "name: x\nbackend: ssh\nmodels: [{name: a, batches: [8]}]\n", "backend: \"ssh\""},
		{"device", "name: x\nmodels: [{name: a, batches: [8]}]\nworkload: {device: tpu}\n", "workload.device"},
		{"mem fraction", "name: x\nmodels: [{name: a, batches: [8]}]\nworkload: {mem_fraction: 2}\n", "workload.mem_fraction"},
		{"env key", "name: x\nmodels: [{name: a, batches: [8]}]\nworkload: {env: {'A B': x}}\n", "workload.env"},
		{"duration", "name: x\nmodels: [{name: a, batches: [8]}]\ntimeouts: {ready: soon}\n", "not a duration"},
		{"container image", "name: x\nbackend: container\nmodels: [{name: a, batches: [8]}]\n", "container.image: required"},
		{"unsafe image", "name: x\nbackend: container\ncontainer: {image: 'img;rm -rf /'}\nmodels: [{name: a, batches: [8]}]\n", "container.image"},
		{"ulimit", "name: x\nbackend: container\ncontainer: {image: i, ulimits: ['nofile=a']}\nmodels: [{name: a, batches: [8]}]\n", "container.ulimits[0]"},
		{"gpu id", "name: x\ngpus: ['0 1']\nmodels: [{name: a, batches: [8]}]\n", "gpus[0]"},
		{"fake slowdown", "name: x\nmodels: [{name: a, batches: [8]}]\nfake: {slowdown: {a: -1}}\n", "fake.slowdown.a"},
		{"nan", "name: x\nmodels: [{name: a, batches: [8]}]\nwarmup: {seconds: .nan}\n", "finite"},
		{"two documents", "name: x\nmodels: [{name: a, batches: [8]}]\n---\nname: y\n", "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCampaign([]byte(tt.yaml), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "campaign c.yaml: ") {
				t.Errorf("err = %v, want the file name as context", err)
			}
		})
	}
}

func labels(cells []Cell) []string {
	var out []string
	for _, c := range cells {
		out = append(out, c.Label)
	}
	return out
}

func TestCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"default pairs: all unordered plus self", `
name: x
models: [{name: a, batches: [8]}, {name: b, batches: [4]}]
`, []string{"a/8/8", "b/4/4", "a/8/8+a/8/8", "a/8/8+b/4/4", "b/4/4+b/4/4"}},
		{"sub-batch levels and a full grid", `
name: x
sub_batch_levels: 2
models: [{name: a, batches: [16], min_sub_batch: 8}, {name: b, batches: [4], min_sub_batch: 4}]
pairs: [[a, b]]
`, []string{"a/16/16", "a/16/8", "b/4/4", "a/16/16+b/4/4", "a/16/8+b/4/4"}},
		{"matched grid", `
name: x
pair_grid: matched
models: [{name: a, batches: [16], sub_batches: [16, 8]}, {name: b, batches: [4], sub_batches: [4, 2]}]
`, []string{"a/16/16", "a/16/8", "b/4/4", "b/4/2", "a/16/16+a/16/16", "a/16/8+a/16/8", "a/16/16+b/4/4", "a/16/8+b/4/2", "b/4/4+b/4/4", "b/4/2+b/4/2"}},
		{"self pair, full grid: unordered", `
name: x
models: [{name: a, batches: [16], sub_batches: [16, 8]}]
`, []string{"a/16/16", "a/16/8", "a/16/16+a/16/16", "a/16/16+a/16/8", "a/16/8+a/16/8"}},
		{"solo only", `
name: x
solo_only: true
models: [{name: a, batches: [8, 16]}, {name: b, batches: [4]}]
`, []string{"a/8/8", "a/16/16", "b/4/4"}},
		{"bert goes down to 1", `
name: x
sub_batch_levels: 3
solo_only: true
workload: {script: /nonexistent/train.py}
models: [{name: bert, batches: [2]}, {name: vgg16, batches: [16]}]
`, []string{"bert/2/2", "bert/2/1", "vgg16/16/16", "vgg16/16/8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := mustParse(t, tt.yaml).Cells()
			if diff := cmp.Diff(tt.want, labels(cells)); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			for i, c := range cells {
				if c.Index != i || len(c.ID) != 16 || !dispatch.SafeName(c.Dir()) {
					t.Errorf("cell %d: index %d, id %q, dir %q", i, c.Index, c.ID, c.Dir())
				}
			}
		})
	}
}

func TestCellIDs(t *testing.T) {
	t.Parallel()
	base := mustParse(t, exampleCampaign).Cells()
	seen := map[string]bool{}
	for _, c := range base {
		if seen[c.ID] {
			t.Errorf("duplicate ID %s", c.ID)
		}
		seen[c.ID] = true
	}
	// Paths, timeouts and GPUs do not change what is measured; the window does.
	same := mustParse(t, exampleCampaign+"workload: {python: /usr/bin/python3}\ngpus: ['3']\n")
	same.Timeouts.Grace *= 2
	if diff := cmp.Diff(base, same.Cells()); diff != "" {
		t.Errorf("cell IDs changed with paths/GPUs/timeouts:\n%s", diff)
	}
	other := mustParse(t, strings.Replace(exampleCampaign, "min_steps: 30", "min_steps: 40", 1)).Cells()
	if other[0].ID == base[0].ID {
		t.Error("cell ID did not change with the window")
	}
	// Adding a model appends cells but keeps the IDs of the others.
	more := mustParse(t, strings.Replace(exampleCampaign, "    seq_len: 128\n", "    seq_len: 128\n  - name: gpt2\n    batches: [8]\n", 1)).Cells()
	ids := map[string]bool{}
	for _, c := range more {
		ids[c.ID] = true
	}
	for _, c := range base {
		if !ids[c.ID] {
			t.Errorf("cell %s lost its ID when a model was added", c.Label)
		}
	}
}

func TestPlansABBA(t *testing.T) {
	t.Parallel()
	names := func(ps []runPlan) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.name)
		}
		return out
	}
	c := mustParse(t, "name: x\nrepeats: 3\nmodels: [{name: a, batches: [8]}, {name: b, batches: [8]}]\n")
	cells := c.Cells() // a, b, a+a, a+b, b+b
	if diff := cmp.Diff([]string{"r0-soloA", "r0-soloB", "r0-pair", "r1-pair", "r1-soloB", "r1-soloA", "r2-soloA", "r2-soloB", "r2-pair"},
		names(plans(c, cells[3], 3))); diff != "" {
		t.Errorf("pair cell ABBA (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r0-soloA", "r0-pair", "r1-pair", "r1-soloA", "r2-soloA", "r2-pair"}, names(plans(c, cells[2], 3))); diff != "" {
		t.Errorf("self pair (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r0-solo", "r1-solo", "r2-solo"}, names(plans(c, cells[0], 3))); diff != "" {
		t.Errorf("solo cell (-want +got):\n%s", diff)
	}
	c.ReuseSolo = true
	if diff := cmp.Diff([]string{"r0-pair", "r1-pair", "r2-pair"}, names(plans(c, cells[3], 3))); diff != "" {
		t.Errorf("reuse_solo (-want +got):\n%s", diff)
	}
}
