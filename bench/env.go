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
// holds traces/ and profiles/). Without it the data are looked for at ../shared/data and
// shared/data relative to the module root.
const DataEnv = "SHAREBENCH_DATA"

// Env locates the inputs of the experiments: the module root (for the shipped profiles, model
// maps and derived traces) and the public data directory. Inputs are named relative to one of
// the two, so that run specifications and outputs never contain a machine's absolute paths.
type Env struct {
	// Root is the module root (the directory holding go.mod of module sharebench).
	Root string
	// Data is the public data directory; empty when it was not found (experiments that need
	// it then fail with an error naming the missing file).
	Data string
}

// FindEnv locates the module root by walking up from the working directory to the go.mod of
// module sharebench, and the data directory from $SHAREBENCH_DATA, else ../shared/data or
// shared/data next to the module root.
func FindEnv() (Env, error) {
	wd, err := os.Getwd()
	if err != nil {
		return Env{}, fmt.Errorf("bench: %w", err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return Env{}, err
	}
	env := Env{Root: root}
	if d := os.Getenv(DataEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "traces")); err != nil {
			return Env{}, fmt.Errorf("bench: %s=%s: no traces/ directory: %w", DataEnv, d, err)
		}
		env.Data = d
		return env, nil
	}
	for _, d := range []string{filepath.Join(root, "..", "shared", "data"), filepath.Join(root, "shared", "data")} {
		if st, err := os.Stat(filepath.Join(d, "traces")); err == nil && st.IsDir() {
			env.Data = filepath.Clean(d)
			break
		}
	}
	return env, nil
}

// moduleRoot returns the nearest directory at or above dir whose go.mod declares module
// sharebench.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if isModuleRoot(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("bench: module root not found: no go.mod of module sharebench at or above the working directory")
		}
		d = up
	}
}

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == "sharebench"
		}
	}
	return false
}

// Path resolves an input name: "data:REL" is REL inside the data directory, anything else is
// relative to the module root.
func (e Env) Path(name string) (string, error) {
	if rel, ok := strings.CutPrefix(name, "data:"); ok {
		if e.Data == "" {
			return "", fmt.Errorf("bench: input %s: the public data directory was not found (set %s, or put it at ../shared/data next to the module)", rel, DataEnv)
		}
		return filepath.Join(e.Data, filepath.FromSlash(rel)), nil
	}
	return filepath.Join(e.Root, filepath.FromSlash(name)), nil
}
