package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DataEnv is the environment variable that names the public data directory (the folder that
// holds traces/). Without it the data shipped in the repository's data/ are used, with
// ../shared/data (next to the module) as a fallback for files not shipped.
const DataEnv = "SHAREBENCH_DATA"

// Env locates the inputs of the experiments: the module root (for the shipped profiles, model
// maps and derived traces) and the public data directory. Inputs are named relative to one of
// the two, so that run specifications and outputs never contain a machine's absolute paths.
type Env struct {
	// Root is the module root (the directory holding go.mod of module github.com/sharebench/sharebench).
	Root string
	// Data is the public data directory: the repository's data/ unless $SHAREBENCH_DATA says
	// otherwise.
	Data string
	// Fallback is a second data directory searched for files Data lacks (the full public data
	// set next to the module, when present); empty if none.
	Fallback string
}

// FindEnv locates the module root by walking up from the working directory to the go.mod of
// module sharebench, and the data directory: $SHAREBENCH_DATA, else the repository's data/
// with ../shared/data or shared/data next to the module root as a fallback.
func FindEnv() (Env, error) {
	wd, err := os.Getwd()
	if err != nil {
		return Env{}, fmt.Errorf("bench: %w", err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return Env{}, err
	}
	env := Env{Root: root, Data: filepath.Join(root, "data")}
	if d := os.Getenv(DataEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "traces")); err != nil {
			return Env{}, fmt.Errorf("bench: %s=%s: no traces/ directory: %w", DataEnv, d, err)
		}
		env.Data = d
		return env, nil
	}
	for _, d := range []string{filepath.Join(root, "..", "shared", "data"), filepath.Join(root, "shared", "data")} {
		if st, err := os.Stat(filepath.Join(d, "traces")); err == nil && st.IsDir() {
			env.Fallback = filepath.Clean(d)
			break
		}
	}
	return env, nil
}

// moduleRoot returns the nearest directory at or above dir whose go.mod declares the module.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if isModuleRoot(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("bench: module root not found: no go.mod of module github.com/sharebench/sharebench at or above the working directory")
		}
		d = up
	}
}

// modulePath is the module path in go.mod.
const modulePath = "github.com/sharebench/sharebench"

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == modulePath
		}
	}
	return false
}

// Path resolves an input name: "data:REL" is REL inside the data directory, anything else is
// relative to the module root.
func (e Env) Path(name string) (string, error) {
	if rel, ok := strings.CutPrefix(name, "data:"); ok {
		p := filepath.Join(e.Data, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err != nil && e.Fallback != "" {
			if q := filepath.Join(e.Fallback, filepath.FromSlash(rel)); fileExists(q) {
				return q, nil
			}
		}
		return p, nil
	}
	return filepath.Join(e.Root, filepath.FromSlash(name)), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
