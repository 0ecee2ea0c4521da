package profile

import (
	"bytes"
	"strings"
	"testing"
)

const tinyProfile = `{
  "format": "sharebench-profile",
  "version": 1,
  "gpu": "test GPU",
  "gpu_mem_bytes": 17179869184,
  "source": "test",
  "provenance": {"origin": "hand-written test fixture"},
  "default_restart_s": 10,
  "models": [
    {"name": "a", "default_batch": 64, "restart_s": {"1": 4, "8": 7},
     "configs": [
       {"batch": 64, "sub_batch": 64, "iter_s": {"1": 0.5, "4": 0.6}, "mem_bytes": 4294967296},
       {"batch": 64, "sub_batch": 32, "iter_s": {"1": 0.55}, "mem_bytes": 2147483648, "mem_estimated": true}
     ]},
    {"name": "b", "default_batch": 16,
     "configs": [{"batch": 16, "sub_batch": 16, "iter_s": {"1": 1}, "mem_bytes": 0}]}
  ],
  "pairs": [
    {"a": {"model": "a", "batch": 64, "sub_batch": 64}, "b": {"model": "b", "batch": 16, "sub_batch": 16}, "gpus": 1, "mode": "timeslice", "xi": 1.4},
    {"a": {"model": "a", "batch": 64, "sub_batch": 64}, "b": {"model": "b", "batch": 16, "sub_batch": 16}, "gpus": 4, "mode": "timeslice", "xi": 1.7},
    {"a": {"model": "b", "batch": 16, "sub_batch": 16}, "b": {"model": "a", "batch": 64, "sub_batch": 64}, "gpus": 1, "mode": "mps", "xi": 1.1}
  ]
}
`

func TestLoadAndLookups(t *testing.T) {
	tab, err := Load(strings.NewReader(tinyProfile), "tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	a64 := Config{"a", 64, 64}
	b16 := Config{"b", 16, 16}
	for _, tc := range []struct {
		gpus   int
		xi     float64
		wantOK bool
	}{{1, 1.4, true}, {2, 1.4, true}, {4, 1.7, true}, {32, 1.7, true}} {
		xi, ok := tab.Slowdown(a64, b16, tc.gpus, Timeslice)
		if ok != tc.wantOK || xi != tc.xi {
			t.Errorf("Slowdown(a|b, %d GPUs) = %v, %v; want %v", tc.gpus, xi, ok, tc.xi)
		}
	}
	if _, ok := tab.Slowdown(b16, a64, 1, Timeslice); ok {
		t.Error("the reverse direction must be missing: pairs are ordered")
	}
	if xi, ok := tab.Slowdown(b16, a64, 8, MPS); !ok || xi != 1.1 {
		t.Errorf("MPS lookup = %v, %v", xi, ok)
	}
	if d, ok := tab.IterTime(a64, 2); !ok || d.Seconds() != 0.5 {
		t.Errorf("IterTime(a, 2 GPUs) = %v, %v (the 1-GPU value applies up to 4)", d, ok)
	}
	if d, _ := tab.IterTime(a64, 8); d.Seconds() != 0.6 {
		t.Errorf("IterTime(a, 8 GPUs) = %v", d)
	}
	if got := tab.SubBatches("a", 64); len(got) != 2 || got[0] != 64 || got[1] != 32 {
		t.Errorf("SubBatches = %v, want [64 32]", got)
	}
	if mem, est, ok := tab.Mem(Config{"a", 64, 32}); !ok || !est || mem != 2<<30 {
		t.Errorf("Mem = %v, %v, %v", mem, est, ok)
	}
	if r, ok := tab.RestartFor("a", 4); !ok || r.Seconds() != 4 {
		t.Errorf("RestartFor(a, 4) = %v, %v", r, ok)
	}
	if r, ok := tab.RestartFor("b", 1); !ok || r.Seconds() != 10 {
		t.Errorf("RestartFor(b) = %v, %v, want the default 10", r, ok)
	}
	for _, tc := range []struct {
		model string
		gpus  int
		want  float64
		known bool
	}{{"a2c", 1, 38, true}, {"a2c", 8, 46, true}, {"a2c", 12, 46, true}, {"vgg19", 64, 10, true}, {"resnet18", 3, 5, true}, {"dqn", 0, 5, true}, {"resnet50", 1, 10, false}} {
		if d, known := LineageRestart(tc.model, tc.gpus); d.Seconds() != tc.want || known != tc.known {
			t.Errorf("LineageRestart(%s, %d) = %v, %v, want %v s, %v", tc.model, tc.gpus, d, known, tc.want, tc.known)
		}
	}
	// Canonical writing: load → write → load → write is a fixed point.
	var w1, w2 bytes.Buffer
	if err := tab.Write(&w1); err != nil {
		t.Fatal(err)
	}
	tab2, err := Load(bytes.NewReader(w1.Bytes()), "w1")
	if err != nil {
		t.Fatal(err)
	}
	tab2.Write(&w2)
	if !bytes.Equal(w1.Bytes(), w2.Bytes()) {
		t.Error("Write is not canonical")
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, edit, want string
	}{
		{"syntax", `"version": 1,` + "\n  \"gpu\": ,", "tiny.json:4:"},
		{"unknown field", `"version": 1,` + "\n  \"colour\": 1,", `unknown field "colour"`},
		{"version", `"version": 9,`, "version 9 not supported"},
		{"bad xi", `"version": 1,`, "xi must be a number in (0, 1000], got -1"},
		{"sub-batch", `"version": 1,`, "need batch > 0 and sub_batch dividing batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(tinyProfile, `"version": 1,`, tc.edit, 1)
			switch tc.name {
			case "bad xi":
				src = strings.Replace(src, `"xi": 1.4`, `"xi": -1`, 1)
			case "sub-batch":
				src = strings.Replace(src, `"sub_batch": 32`, `"sub_batch": 30`, 1)
			}
			_, err := Load(strings.NewReader(src), "tiny.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// Schema-valid extremes are one-line errors naming the value (they once panicked the engine).
	for _, tc := range []struct{ old, new, want string }{
		{`"iter_s": {"1": 1}`, `"iter_s": {"1": 1e10}`, "model b: config b/16/16: iter_s: GPU count 1: want seconds in [1e-09, 3.1536e+09], got 1e+10"},
		{`"iter_s": {"1": 1}`, `"iter_s": {"1": 1e300}`, "model b: config b/16/16: iter_s: GPU count 1: want seconds in [1e-09, 3.1536e+09], got 1e+300"},
		{`"iter_s": {"1": 1}`, `"iter_s": {"1": 1e-300}`, "model b: config b/16/16: iter_s: GPU count 1: want seconds in [1e-09, 3.1536e+09], got 1e-300"},
		{`"xi": 1.4`, `"xi": 1e12`, "pairs[0] a/64/64+b/16/16: xi must be a number in (0, 1000], got 1e+12"},
		{`"default_restart_s": 10`, `"default_restart_s": 1e300`, "default_restart_s: want seconds in [0, 3.1536e+07], got 1e+300"},
		{`"restart_s": {"1": 4, "8": 7}`, `"restart_s": {"1": 4e9}`, "model a: restart_s: GPU count 1: want seconds in [0, 3.1536e+07], got 4e+09"},
	} {
		src := strings.Replace(tinyProfile, tc.old, tc.new, 1)
		_, err := Load(strings.NewReader(src), "tiny.json")
		if err == nil || err.Error() != "profile: tiny.json: "+tc.want {
			t.Errorf("%s: err = %v, want %q", tc.new, err, tc.want)
		}
	}
	if _, err := Load(strings.NewReader("  "), "empty.json"); err == nil || !strings.Contains(err.Error(), "empty file") {
		t.Errorf("empty: %v", err)
	}
}

func TestModelMap(t *testing.T) {
	src := "trace_model,trace_batch,profile_model,profile_batch,note\n# comment\nvgg16,*,resnet50,64,heavy CNN\nvgg16,32,resnet50,128,bigger batch\nbert,*,transformer,*,keep batch\n"
	m, err := LoadModelMap(strings.NewReader(src), "map.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		batch int
		want  string
		wantB int
	}{{"vgg16", 16, "resnet50", 64}, {"vgg16", 32, "resnet50", 128}, {"bert", 8, "transformer", 8}, {"gpt2", 4, "gpt2", 4}} {
		if got, b := m.Resolve(tc.model, tc.batch); got != tc.want || b != tc.wantB {
			t.Errorf("Resolve(%s, %d) = %s, %d; want %s, %d", tc.model, tc.batch, got, b, tc.want, tc.wantB)
		}
	}
	for _, bad := range []struct{ src, want string }{
		{"a,b\n", "map.csv:1: header"},
		{"trace_model,trace_batch,profile_model,profile_batch,note\nx,0,y,1,n\n", "map.csv:2: trace_batch"},
		{"trace_model,trace_batch,profile_model,profile_batch,note\nx,*,y,1,n\nx,*,z,1,n\n", "duplicate rule"},
	} {
		if _, err := LoadModelMap(strings.NewReader(bad.src), "map.csv"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("LoadModelMap(%q) = %v, want %q", bad.src, err, bad.want)
		}
	}
}

// FuzzLoad: the loader never panics, and whatever it accepts writes canonically and loads back
// to the same bytes.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(tinyProfile))
	f.Add([]byte(`{"format":"sharebench-profile","version":1,"models":[],"pairs":[]}`))
	f.Add([]byte(`{"format":"sharebench-profile","version":1,"models":[{"name":"x","default_batch":1,"configs":[{"batch":1,"sub_batch":1,"iter_s":{"1":1},"mem_bytes":1}]}],"pairs":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Load(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "profile: fuzz.json") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		var w1, w2 bytes.Buffer
		if err := tab.Write(&w1); err != nil {
			t.Fatal(err)
		}
		tab2, err := Load(bytes.NewReader(w1.Bytes()), "fuzz.json")
		if err != nil {
			t.Fatalf("written profile does not load: %v\n%s", err, w1.Bytes())
		}
		tab2.Write(&w2)
		if !bytes.Equal(w1.Bytes(), w2.Bytes()) {
			t.Fatalf("round trip differs")
		}
	})
}
