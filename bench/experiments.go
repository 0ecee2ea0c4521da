package bench

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
)

// The paper's experiments are spec files (docs/experiments.md): bench/experiments/<label>/*.yaml,
// one experiment each, run in file-name order. The label "paper" is the full reproduction of
// "make reproduce", "smoke" its seconds-long version. REPRODUCE.md explains every experiment.
//
//go:embed experiments
var specFS embed.FS

var (
	tableOnce sync.Once
	table     map[string][]Experiment
	tableErr  error
)

// loadTable reads every shipped spec once.
func loadTable() (map[string][]Experiment, error) {
	tableOnce.Do(func() {
		table = map[string][]Experiment{}
		dirs, err := fs.ReadDir(specFS, "experiments")
		if err != nil {
			tableErr = err
			return
		}
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			label := d.Name()
			files, err := fs.Glob(specFS, path.Join("experiments", label, "*.yaml"))
			if err != nil {
				tableErr = err
				return
			}
			// File-name order, a name before its sub-experiments (E4.yaml before E4-philly.yaml).
			slices.SortFunc(files, func(a, b string) int {
				return strings.Compare(strings.TrimSuffix(a, ".yaml"), strings.TrimSuffix(b, ".yaml"))
			})
			for _, f := range files {
				data, err := specFS.ReadFile(f)
				if err != nil {
					tableErr = err
					return
				}
				e, err := ParseSpec(strings.NewReader(string(data)), "bench/"+f, repoResolver(path.Dir("bench/"+f)))
				if err != nil {
					tableErr = err
					return
				}
				table[label] = append(table[label], e)
			}
		}
	})
	return table, tableErr
}

// repoResolver resolves a shipped spec's relative paths inside the repository.
func repoResolver(dir string) PathResolver {
	return func(p string) string {
		if p == "" || strings.HasPrefix(p, "data:") || strings.HasPrefix(p, "repo:") {
			return p
		}
		return "repo:" + path.Join(dir, p)
	}
}

// Experiments returns the shipped experiments of a label, in run order. The specs are checked
// by the tests; an unreadable one is a programming error.
func Experiments(label string) []Experiment {
	t, err := loadTable()
	if err != nil {
		panic(fmt.Sprintf("bench: shipped experiment specs: %v", err))
	}
	out := slices.Clone(t[label])
	for i := range out {
		out[i].Settings = slices.Clone(out[i].Settings)
		out[i].Series = slices.Clone(out[i].Series)
	}
	return out
}

// Labels returns the labels of the shipped experiments, sorted.
func Labels() []string {
	t, err := loadTable()
	if err != nil {
		panic(fmt.Sprintf("bench: shipped experiment specs: %v", err))
	}
	var ls []string
	for l := range t {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	return ls
}

// WithProfile returns the experiments with every use of the shipped default profile
// (ProfileGavelV100) replaced by the profile file and its model map (empty: the identity), its
// derivations and ξ scales kept: the paper's experiments under another profile.
func WithProfile(exps []Experiment, file, modelMap string) []Experiment {
	out := slices.Clone(exps)
	for i := range out {
		out[i].Settings = slices.Clone(out[i].Settings)
		for k := range out[i].Settings {
			p := &out[i].Settings[k].Profile
			if strings.TrimPrefix(p.File, "repo:") == ProfileGavelV100 {
				p.File, p.ModelMap = file, modelMap
			}
		}
	}
	return out
}
