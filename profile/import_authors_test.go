package profile

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func importAuthorsFixture(t testing.TB) *Table {
	t.Helper()
	tb, err := ImportAuthors(bytes.NewReader(readFile(t, "testdata/import/authors/ratio.json")),
		bytes.NewReader(readFile(t, "testdata/import/authors/itertime.json")),
		AuthorsOptions{RatioName: "ratio.json", IterTimeName: "itertime.json"})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestImportAuthors(t *testing.T) {
	tb := importAuthorsFixture(t)
	r18, vgg, bert := Config{"resnet18", 128, 128}, Config{"vgg16", 16, 16}, Config{"bert", 4, 4}
	wantIter(t, tb, r18, 4, 0.3)
	wantIter(t, tb, vgg, 8, 0.7)
	wantIter(t, tb, bert, 1, 0.4)
	wantXi(t, tb, r18, vgg, 1, Timeslice, 1.3)
	wantXi(t, tb, r18, vgg, 1, MPS, 1.1)
	wantXi(t, tb, r18, vgg, 4, Timeslice, 1.5)
	wantXi(t, tb, vgg, r18, 1, MPS, 1.2)
	wantXi(t, tb, bert, r18, 1, MPS, 1.1)
	if len(tb.Pairs) != 8 {
		t.Errorf("%d pairs, want 8", len(tb.Pairs))
	}
	for _, p := range tb.Pairs {
		if p.A == bert && p.Mode == Timeslice {
			t.Errorf("xi 0 must give no entry: %+v", p)
		}
		if p.A == r18 && p.GPUs == 4 && p.Mode == MPS {
			t.Errorf("xi null must give no entry: %+v", p)
		}
	}
	if b, est, _ := tb.Mem(r18); b != 6432<<20 || est {
		t.Errorf("resnet18 memory %d (estimated %v), want the authors' 6432 MiB", b, est)
	}
	if !hasNote(tb, "2 xi values that are null or ≤ 0") || !hasNote(tb, "VGG16+GPT2") {
		t.Errorf("notes: %q", tb.Notes)
	}
	checkTable(t, tb)
}

// TestExportAuthorsRoundTrip exports a table as the authors' files and imports them again.
func TestExportAuthorsRoundTrip(t *testing.T) {
	tb := importAuthorsFixture(t)
	var ratio, iter bytes.Buffer
	if err := tb.ExportAuthors(&ratio, &iter, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	var r map[string]map[string]map[string][]*float64
	if err := json.Unmarshal(ratio.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if e := r["ResNet-18"]["VGG16"]["4"]; len(e) != 2 || *e[0] != 1.5 || e[1] != nil {
		t.Errorf("ratio ResNet-18/VGG16/4 = %v, want [1.5, null]", e)
	}
	back, err := ImportAuthors(&ratio, &iter, AuthorsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Models, tb.Models) {
		t.Errorf("models changed:\n%+v\n%+v", back.Models, tb.Models)
	}
	if !reflect.DeepEqual(back.Pairs, tb.Pairs) {
		t.Errorf("pairs changed:\n%+v\n%+v", back.Pairs, tb.Pairs)
	}
	// Exporting twice gives the same bytes.
	var r2, i2 bytes.Buffer
	if err := back.ExportAuthors(&r2, &i2, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	var r1, i1 bytes.Buffer
	if err := tb.ExportAuthors(&r1, &i1, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r1.Bytes(), r2.Bytes()) || !bytes.Equal(i1.Bytes(), i2.Bytes()) {
		t.Error("export is not deterministic")
	}
}

// TestExportAuthorsGavel exports an imported Gavel profile: every model at its default batch.
func TestExportAuthorsGavel(t *testing.T) {
	tb, err := ImportGavel(bytes.NewReader(readFile(t, "testdata/import/gavel.json")), "gavel.json", GavelOptions{GPU: "v100"})
	if err != nil {
		t.Fatal(err)
	}
	var ratio, iter bytes.Buffer
	if err := tb.ExportAuthors(&ratio, &iter, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	var it map[string]map[string]float64
	if err := json.Unmarshal(iter.Bytes(), &it); err != nil {
		t.Fatal(err)
	}
	if it["ResNet-18"]["2"] != 2.0/25 || it["lm"]["1"] != 1.0/80 {
		t.Errorf("itertime = %v", it)
	}
	if !strings.Contains(ratio.String(), `"lm": {`) {
		t.Errorf("ratio.json misses lm:\n%s", ratio.String())
	}
}

func TestImportAuthorsErrors(t *testing.T) {
	okIter := `{"ResNet-18": {"1": 0.2}}`
	for _, tc := range []struct {
		name, ratio, iter string
		want              []string
	}{
		{"iter syntax", `{}`, "{\n\"ResNet-18\": {\"1\" 0.2}}", []string{"i.json:2:"}},
		{"iter array", `{}`, `[]`, []string{"i.json:1:1", "want an object of models"}},
		{"iter gpu", `{}`, `{"ResNet-18": {"one": 0.2}}`, []string{"i.json:1:16", "GPU count"}},
		{"iter gpu zero", `{}`, `{"ResNet-18": {"0": 0.2}}`, []string{"GPU count"}},
		{"iter negative", `{}`, `{"ResNet-18": {"1": -0.2}}`, []string{"i.json:1:21", "positive"}},
		{"iter empty model", `{}`, `{"ResNet-18": {}}`, []string{"no iteration times"}},
		{"iter bad name", `{}`, `{"!!": {"1": 1}}`, []string{"no usable characters"}},
		{"iter key clash", `{}`, `{"resnet18": {"1": 1}, "ResNet-18": {"1": 1}}`, []string{"another name already uses"}},
		{"ratio not object", `{"ResNet-18": 3}`, okIter, []string{"r.json:1:15", "partner models"}},
		{"ratio length", `{"ResNet-18": {"ResNet-18": {"1": [1, 2, 3]}}}`, okIter, []string{"r.json:1:35", "[xi_noMPS, xi_MPS]"}},
		{"ratio string", `{"ResNet-18": {"ResNet-18": {"1": ["x"]}}}`, okIter, []string{"r.json:1:36", "number or null"}},
		{"ratio gpu", `{"ResNet-18": {"ResNet-18": {"01": [1, 1]}}}`, okIter, []string{"GPU count"}},
		{"empty", ``, okIter, []string{"r.json: empty file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportAuthors(strings.NewReader(tc.ratio), strings.NewReader(tc.iter), AuthorsOptions{RatioName: "r.json", IterTimeName: "i.json"})
			wantErr(t, err, tc.want...)
		})
	}
}

// FuzzImportAuthors checks that no input panics and that every imported table normalizes,
// survives Write→Load byte for byte, and exports.
func FuzzImportAuthors(f *testing.F) {
	f.Add(readFile(f, "testdata/import/authors/ratio.json"), readFile(f, "testdata/import/authors/itertime.json"))
	f.Add([]byte(`{"A": {"A": {"2": [1.5]}}}`), []byte(`{"A": {"2": 1}}`))
	f.Fuzz(func(t *testing.T, ratio, iter []byte) {
		tb, err := ImportAuthors(bytes.NewReader(ratio), bytes.NewReader(iter), AuthorsOptions{})
		if err != nil {
			return
		}
		checkTable(t, tb)
		if err := tb.ExportAuthors(&bytes.Buffer{}, &bytes.Buffer{}, ExportOptions{}); err != nil {
			t.Fatalf("export: %v", err)
		}
	})
}

// TestAuthorsFixturesLabelled keeps the hand-made fixtures labelled as such.
func TestAuthorsFixturesLabelled(t *testing.T) {
	b, err := os.ReadFile("testdata/import/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "invented for tests") {
		t.Error("testdata/import/README.md must say the authors' fixtures are invented")
	}
}

// TestExportAuthorsMapped exports the shipped Gavel profile through its model map: the authors'
// scheduler looks up ratio[a][b][GPUs of a] and itertime[a][GPUs] under their display names for
// every pair of their eight models and every GPU count of their traces, so every key must exist.
func TestExportAuthorsMapped(t *testing.T) {
	tb, err := LoadFile(filepath.Join("..", "results", "profiles", "gavel-v100.json"))
	if err != nil {
		t.Fatal(err)
	}
	mm, err := LoadModelMapFile(filepath.Join("..", "bench", "modelmaps", "gavel.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var ratio, iter bytes.Buffer
	if err := tb.ExportAuthors(&ratio, &iter, ExportOptions{ModelMap: mm}); err != nil {
		t.Fatal(err)
	}
	var r map[string]map[string]map[string][]*float64
	var it map[string]map[string]float64
	if err := json.Unmarshal(ratio.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(iter.Bytes(), &it); err != nil {
		t.Fatal(err)
	}
	for _, a := range authorsDisplay {
		for _, g := range AuthorsGPUCounts {
			if it[a][strconv.Itoa(g)] <= 0 {
				t.Errorf("itertime[%s][%d] missing", a, g)
			}
			for _, b := range authorsDisplay {
				if e := r[a][b][strconv.Itoa(g)]; len(e) != 2 || e[0] == nil {
					t.Errorf("ratio[%s][%s][%d] = %v, want a time-slicing value", a, b, g, e)
				}
			}
		}
	}
	// GPT2 is Gavel's transformer at batch 128: its 8-GPU step time is the profile's.
	solo, _ := tb.Solo(Config{"transformer", 128, 128})
	if want, _ := solo.IterS.At(8); it["GPT2"]["8"] != want {
		t.Errorf("itertime[GPT2][8] = %v, want %v", it["GPT2"]["8"], want)
	}
}
