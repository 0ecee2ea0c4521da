package profile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func importGavelFile(t testing.TB, path, gpu string) *Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := ImportGavel(f, "simulation_throughputs.json", GavelOptions{GPU: gpu})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestImportGavelShipped spot-checks numbers converted from Gavel's file against values computed
// by hand from the raw throughputs (quoted in the comments).
func TestImportGavelShipped(t *testing.T) {
	path := dataFile(t, "gavel-throughputs/simulation_throughputs.json")
	v100 := importGavelFile(t, path, "V100")
	r50 := Config{"resnet50", 64, 64}
	tr32 := Config{"transformer", 32, 32}
	// v100 "('ResNet-50 (batch size 64)', 1)": null 4.394774823323071 steps/s → 1/4.3947… s.
	wantIter(t, v100, r50, 1, 0.2275429436550423)
	// scale factor 8: null 17.303172756892167 steps/s summed over 8 workers → 8/17.30… s.
	wantIter(t, v100, r50, 8, 0.4623429536535983)
	// with Transformer 32: [2.48752036332518, 2.0519338792685047]; Transformer 32 alone 10.620893339463915.
	wantXi(t, v100, r50, tr32, 1, Timeslice, 4.394774823323071/2.48752036332518)
	wantXi(t, v100, tr32, r50, 1, Timeslice, 10.620893339463915/2.0519338792685047)
	// LM 5 with A3C: [57.320248317706344, 3.735073805732407]; LM 5 alone 109.16661771207029, A3C alone 7.175767179667988.
	wantXi(t, v100, Config{"lm", 5, 5}, Config{"a3c", 1, 1}, 1, Timeslice, 109.16661771207029/57.320248317706344)
	wantXi(t, v100, Config{"a3c", 1, 1}, Config{"lm", 5, 5}, 1, Timeslice, 7.175767179667988/3.735073805732407)

	wantModels := []string{"a3c", "cyclegan", "lm", "recommendation", "resnet18", "resnet50", "transformer"}
	if got := strings.Join(v100.ModelNames(), " "); got != strings.Join(wantModels, " ") {
		t.Errorf("models = %s, want %s", got, strings.Join(wantModels, " "))
	}
	configs := 0
	for _, m := range v100.Models {
		configs += len(m.Configs)
	}
	// 26 job types; 676 ordered pairs on 1 GPU of which 40 are zero.
	if configs != 26 || len(v100.Pairs) != 636 {
		t.Errorf("v100: %d configs, %d pairs; want 26, 636", configs, len(v100.Pairs))
	}
	for _, p := range v100.Pairs {
		if p.GPUs != 1 || p.Mode != Timeslice || p.A.Batch != p.A.SubBatch {
			t.Fatalf("unexpected pair %+v", p)
		}
	}
	if s, _ := v100.Solo(r50); !s.MemEstimated || s.MemBytes == 0 {
		t.Errorf("resnet50/64: want an estimated memory, got %d (estimated %v)", s.MemBytes, s.MemEstimated)
	}
	checkTable(t, v100)

	// K80: ResNet-50 128 has isolated throughput 0 on 2, 4 and 8 GPUs, and
	// "('ResNet-18 (batch size 16)', 1)" + "('ResNet-50 (batch size 128)', 1)" is [0.0, 0.0].
	k80 := importGavelFile(t, path, "k80")
	s, ok := k80.Solo(Config{"resnet50", 128, 128})
	if !ok || len(s.IterS) != 1 || s.IterS[1] == 0 {
		t.Errorf("k80 resnet50/128: iter_s = %v, want only 1 GPU", s.IterS)
	}
	noPair(t, k80, Config{"resnet18", 16, 16}, Config{"resnet50", 128, 128})
	if !hasNote(k80, "isolated throughput 0") || !hasNote(k80, "co-located throughputs of 0") {
		t.Errorf("k80 notes miss the zero-throughput caveats: %q", k80.Notes)
	}
	checkTable(t, k80)
}

// TestImportGavelPhysical checks that physical_cluster_throughputs.json imports too.
func TestImportGavelPhysical(t *testing.T) {
	path := dataFile(t, "gavel-throughputs/physical_cluster_throughputs.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := ImportGavel(f, "physical_cluster_throughputs.json", GavelOptions{GPU: "v100"})
	if err != nil {
		t.Fatal(err)
	}
	if tb.Provenance.Path != "scheduler/physical_cluster_throughputs.json" {
		t.Errorf("path = %q", tb.Provenance.Path)
	}
	// "('ResNet-50 (batch size 64)', 1)": null 4.525762041224065 in the physical file.
	wantIter(t, tb, Config{"resnet50", 64, 64}, 1, 1/4.525762041224065)
	checkTable(t, tb)
}

func TestImportGavelFixture(t *testing.T) {
	data := readFile(t, "testdata/import/gavel.json")
	tb, err := ImportGavel(bytes.NewReader(data), "gavel.json", GavelOptions{GPU: "v100", GPUMemBytes: 32 << 30})
	if err != nil {
		t.Fatal(err)
	}
	r18, lm, a3c := Config{"resnet18", 32, 32}, Config{"lm", 10, 10}, Config{"a3c", 1, 1}
	wantIter(t, tb, r18, 1, 1.0/20)
	wantIter(t, tb, r18, 2, 2.0/25)
	wantIter(t, tb, lm, 1, 1.0/80)
	wantXi(t, tb, r18, r18, 1, Timeslice, 2)
	wantXi(t, tb, r18, lm, 1, Timeslice, 20.0/16)
	wantXi(t, tb, lm, r18, 1, Timeslice, 2)
	wantXi(t, tb, a3c, lm, 1, Timeslice, 2)
	noPair(t, tb, r18, a3c)
	noPair(t, tb, a3c, r18)
	if len(tb.Pairs) != 7 || tb.GPUMemBytes != 32<<30 {
		t.Errorf("%d pairs, gpu_mem_bytes %d; want 7, 32 GiB", len(tb.Pairs), tb.GPUMemBytes)
	}
	if !hasNote(tb, "2 co-located throughputs of 0 on 1 GPU") {
		t.Errorf("notes: %q", tb.Notes)
	}
	a := checkTable(t, tb)
	tb2, err := ImportGavel(bytes.NewReader(data), "gavel.json", GavelOptions{GPU: "v100", GPUMemBytes: 32 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if b := checkTable(t, tb2); !bytes.Equal(a, b) {
		t.Error("importing twice gave different bytes")
	}

	k80, err := ImportGavel(bytes.NewReader(data), "gavel.json", GavelOptions{GPU: "K80"})
	if err != nil {
		t.Fatal(err)
	}
	if len(k80.Models) != 1 || len(k80.Pairs) != 0 || k80.GPUMemBytes != 12<<30 {
		t.Errorf("k80: %d models, %d pairs, %d bytes", len(k80.Models), len(k80.Pairs), k80.GPUMemBytes)
	}
}

func TestImportGavelErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, gpu string
		want          []string
	}{
		{"unknown gpu", `{}`, "a100", []string{"unknown GPU"}},
		{"empty", ``, "v100", []string{"x.json: empty file"}},
		{"syntax", "{\n  \"v100\": {,}\n}", "v100", []string{"x.json:2:"}},
		{"truncated", "{\"v100\": {", "v100", []string{"x.json:1:"}},
		{"no worker", `{"k80": {}}`, "v100", []string{`no worker type "v100"`, "k80"}},
		{"not object", `[1]`, "v100", []string{"x.json:1:1", "want an object"}},
		{"bad job key", "{\"v100\": {\n\"ResNet\": {\"null\": 1}}}", "v100", []string{"x.json:2:1", "not of the form"}},
		{"no null", `{"v100": {"('A3C', 1)": {}}}`, "v100", []string{"no isolated"}},
		{"negative", `{"v100": {"('A3C', 1)": {"null": -1}}}`, "v100", []string{"x.json:1:34", "≥ 0"}},
		{"bad pair", `{"v100": {"('A3C', 1)": {"null": 1, "('A3C', 1)": [1]}}}`, "v100", []string{"want [own throughput"}},
		{"dup key", "{\"v100\": {\"('A3C', 1)\": {\"null\": 1, \"null\": 2}}}", "v100", []string{"duplicate key"}},
		{"dup job", `{"v100": {"('A3C', 1)": {"null": 1}, "('A3C',  1)": {"null": 1}}}`, "v100", []string{"not of the form"}},
		{"bad scale", `{"v100": {"('A3C', 0)": {"null": 1}}}`, "v100", []string{"scale factor"}},
		{"trailing", `{"v100": {}} x`, "v100", []string{"x.json:1:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportGavel(strings.NewReader(tc.in), "x.json", GavelOptions{GPU: tc.gpu})
			wantErr(t, err, tc.want...)
		})
	}
}

// FuzzImportGavel checks that no input panics and that every imported table normalizes and
// survives Write→Load byte for byte.
func FuzzImportGavel(f *testing.F) {
	f.Add(readFile(f, "testdata/import/gavel.json"))
	f.Add([]byte(`{"v100": {"('A3C', 1)": {"null": 3, "('A3C', 1)": [1, 1]}}}`))
	f.Add([]byte(`{"v100": {"('X (batch size 4)', 2)": {"null": 1e-300}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := ImportGavel(bytes.NewReader(data), "fuzz.json", GavelOptions{GPU: "v100"})
		if err != nil {
			return
		}
		checkTable(t, tb)
	})
}

// TestReadmeGavelPairs: README's count of the shipped profile's measured pairs is the file's.
func TestReadmeGavelPairs(t *testing.T) {
	prof, err := LoadFile(filepath.Join("..", "results", "profiles", "gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	configs := 0
	for _, m := range prof.Models {
		configs += len(m.Configs)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d of %d configuration pairs", len(prof.Pairs), configs*configs); !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
		t.Errorf("README.md does not say %q", want)
	}
}
