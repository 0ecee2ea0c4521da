package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The imported profiles shipped in results/profiles/ and the model maps in bench/modelmaps/,
// relative to this package.
const (
	shippedDir  = "../results/profiles"
	modelMapDir = "../bench/modelmaps"
)

var shippedProfiles = []string{"gavel-v100.json", "gavel-p100.json", "gavel-k80.json", "blox.json", "pollux.json"}

// TestShippedProfilesRegenerate re-imports every shipped profile exactly as
// results/profiles/regenerate.sh does and requires identical bytes.
func TestShippedProfilesRegenerate(t *testing.T) {
	profiles := filepath.Join(dataDir(t), "profiles")
	for _, tc := range []struct {
		file, command string
		imp           func() (*Table, error)
	}{
		{"gavel-v100.json", "sharebench profile import --from gavel --gpu v100 gavel-throughputs/simulation_throughputs.json", func() (*Table, error) {
			return ImportGavel(bytes.NewReader(readFile(t, filepath.Join(profiles, "gavel-throughputs/simulation_throughputs.json"))), "simulation_throughputs.json", GavelOptions{GPU: "v100"})
		}},
		{"gavel-p100.json", "sharebench profile import --from gavel --gpu p100 gavel-throughputs/simulation_throughputs.json", func() (*Table, error) {
			return ImportGavel(bytes.NewReader(readFile(t, filepath.Join(profiles, "gavel-throughputs/simulation_throughputs.json"))), "simulation_throughputs.json", GavelOptions{GPU: "p100"})
		}},
		{"gavel-k80.json", "sharebench profile import --from gavel --gpu k80 gavel-throughputs/simulation_throughputs.json", func() (*Table, error) {
			return ImportGavel(bytes.NewReader(readFile(t, filepath.Join(profiles, "gavel-throughputs/simulation_throughputs.json"))), "simulation_throughputs.json", GavelOptions{GPU: "k80"})
		}},
		{"blox.json", "sharebench profile import --from blox --relative blox-colocation/norm_speed.csv", func() (*Table, error) {
			return ImportBlox(bytes.NewReader(readFile(t, filepath.Join(profiles, "blox-colocation/norm_speed.csv"))), "norm_speed.csv", BloxOptions{Relative: true})
		}},
		{"pollux.json", "sharebench profile import --from pollux pollux-step-times", func() (*Table, error) {
			return ImportPollux(os.DirFS(filepath.Join(profiles, "pollux-step-times")), []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}, PolluxOptions{})
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tb, err := tc.imp()
			if err != nil {
				t.Fatal(err)
			}
			tb.Provenance.Command = tc.command
			got := checkTable(t, tb)
			if want := readFile(t, filepath.Join(shippedDir, tc.file)); !bytes.Equal(got, want) {
				t.Errorf("%s differs from a fresh import: run results/profiles/regenerate.sh", tc.file)
			}
		})
	}
}

// TestShippedProfiles checks the shipped profiles without the data sets: they load, carry full
// provenance and notes, mark estimated memory, and name no path of a particular machine.
func TestShippedProfiles(t *testing.T) {
	for _, name := range shippedProfiles {
		t.Run(name, func(t *testing.T) {
			data := readFile(t, filepath.Join(shippedDir, name))
			tb, err := Load(bytes.NewReader(data), name)
			if err != nil {
				t.Fatal(err)
			}
			p := tb.Provenance
			if p.Origin == "" || p.Path == "" || p.Commit == "" || p.Licence == "" || !strings.HasPrefix(p.Command, "sharebench profile import ") {
				t.Errorf("incomplete provenance: %+v", p)
			}
			if len(tb.Notes) < 3 {
				t.Errorf("only %d notes", len(tb.Notes))
			}
			for _, bad := range []string{"/" + "work/", "/home/", "/tmp/", "/root/", `C:\`} {
				if bytes.Contains(data, []byte(bad)) {
					t.Errorf("contains the machine path %q", bad)
				}
			}
			estimated := 0
			for _, m := range tb.Models {
				for _, s := range m.Configs {
					if s.MemEstimated {
						estimated++
						if s.MemBytes <= 0 {
							t.Errorf("%s/%d/%d: mem_estimated without mem_bytes", m.Name, s.Batch, s.SubBatch)
						}
					}
				}
			}
			if estimated > 0 && !hasNote(tb, "EstimateMem") {
				t.Error("estimated memory without a note")
			}
		})
	}
}

// traceModels are the model names of the traces in shared/data/traces: the SJF-BSBF / Muri
// models and the Tiresias ones.
var traceModels = []string{
	"resnet18", "shufflenet_v2_x1_0", "vgg16", "vgg19", "bert", "gpt2", "dqn", "a2c",
	"vgg11", "resnet50", "resnet101", "resnet152", "inception3", "inception4", "alexnet", "googlenet",
}

// TestModelMaps loads every model map and checks that it covers all trace models, explains every
// rule and only targets configurations that exist in its profiles.
func TestModelMaps(t *testing.T) {
	for mapFile, profiles := range map[string][]string{
		"gavel.csv":  {"gavel-v100.json", "gavel-p100.json", "gavel-k80.json"},
		"blox.csv":   {"blox.json"},
		"pollux.csv": {"pollux.json"},
	} {
		t.Run(mapFile, func(t *testing.T) {
			mm, err := LoadModelMapFile(filepath.Join(modelMapDir, mapFile))
			if err != nil {
				t.Fatal(err)
			}
			var covered []string
			for _, r := range mm.Rules {
				covered = append(covered, r.TraceModel)
				if strings.TrimSpace(r.Note) == "" {
					t.Errorf("line %d: rule for %s has no note", r.Line, r.TraceModel)
				}
				if r.Batch == 0 {
					t.Errorf("line %d: rule for %s keeps the trace batch; Tiresias traces have none", r.Line, r.TraceModel)
				}
			}
			for _, m := range traceModels {
				if !slices.Contains(covered, m) {
					t.Errorf("trace model %s has no rule", m)
				}
			}
			for _, pf := range profiles {
				tb, err := LoadFile(filepath.Join(shippedDir, pf))
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range traceModels {
					for _, batch := range []int{0, 4, 16, 64, 128} {
						model, b := mm.Resolve(m, batch)
						if len(tb.SubBatches(model, b)) == 0 {
							t.Errorf("%s: %s batch %d maps to %s/%d, which has no configuration", pf, m, batch, model, b)
						}
					}
				}
			}
		})
	}
}
