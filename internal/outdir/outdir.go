// Package outdir decides whether a command may write the directory its --out flag names, so
// that sharebench never deletes or overwrites what it did not write and never touches an input.
//
// Every directory a command is given with --out carries a small marker file, Marker, that names
// the kind of output (run, reproduce, campaign, ...). A directory is sharebench's output of a
// kind when it holds that marker, or when it has the shape of an output written before markers
// existed (see Recognize). A command accepts a directory that does not exist, an empty one, and
// its own kind of output; it refuses anything else unless forced, and never accepts a directory
// holding one of its inputs, forced or not.
package outdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Marker is the name of the marker file at the top of every output directory.
const Marker = ".sharebench"

// Kinds of output directory.
const (
	// Run is one simulation run directory (sharebench simulate): summary.json, jobs.csv, ...
	Run = "run"
	// Reproduce is a reproduction root: run directories below experiments, tables, figures.
	Reproduce = "reproduce"
	// Campaign is a profiling campaign directory (sharebench profile run).
	Campaign = "campaign"
	// Sweep is the output of one experiment spec (sharebench sweep): run directories, tables,
	// figures.
	Sweep = "sweep"
)

// runFiles are the only entries of a run directory (sim's and bench's output files).
var runFiles = []string{"summary.json", "jobs.csv", "util.csv", "decisions.jsonl", "run.json", "failure.json", Marker}

// reproduceReadme is how the README.md that "sharebench reproduce" writes begins.
const reproduceReadme = "# sharebench reproduction outputs"

// markerPrefix begins the marker's first line; the kind follows it.
const markerPrefix = "sharebench output: "

// MarkerContent returns the marker file's bytes for a kind: deterministic, so that output
// trees stay byte-identical between runs.
func MarkerContent(kind string) []byte {
	return []byte(markerPrefix + kind + "\n" +
		"This directory was written by sharebench, which replaces what it wrote here when the command is rerun.\n")
}

// Status says what Check found.
type Status int

const (
	// New: the directory does not exist or is empty.
	New Status = iota
	// Own: the directory is a sharebench output of the wanted kind; the command may replace what
	// it wrote there.
	Own
	// Foreign: the directory is not (or is another kind of) sharebench output, accepted because
	// of Force. A command writes its files into it without removing anything and leaves no
	// marker, so that the next command refuses it again.
	Foreign
)

// Options configure Check and Prepare.
type Options struct {
	// Kind is the kind of output the command writes.
	Kind string
	// Inputs are the files (or directories) the command reads. The output directory may not be,
	// or contain, any of them, even with Force.
	Inputs []string
	// Force accepts a non-empty directory that is not the command's kind of output.
	Force bool
	// Flag and ForceFlag name the flags in messages (default --out and --force).
	Flag, ForceFlag string
}

func (o Options) names() (flag, force string) {
	flag, force = o.Flag, o.ForceFlag
	if flag == "" {
		flag = "--out"
	}
	if force == "" {
		force = "--force"
	}
	return flag, force
}

// Check reports whether dir may be written as opt.Kind output, and what it holds; it changes
// nothing. Its errors are one line naming the directory and the reason.
func Check(dir string, opt Options) (Status, error) {
	flag, force := opt.names()
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s %s: %s", flag, dir, fmt.Sprintf(format, a...))
	}
	if dir == "" {
		return New, fmt.Errorf("%s: no directory given", flag)
	}
	out, err := resolve(dir)
	if err != nil {
		return New, fail("%v", err)
	}
	for _, in := range opt.Inputs {
		if in == "" {
			continue
		}
		p, err := resolve(in)
		if err != nil {
			return New, fail("%v", err)
		}
		if within(p, out) {
			return New, fail("refusing to write into a directory that holds the input %s (not even with %s); choose another directory", in, force)
		}
	}
	st, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return New, nil
	case err != nil:
		return New, fail("%v", cause(err))
	case !st.IsDir():
		return New, fail("exists and is not a directory")
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		return New, fail("%v", cause(err))
	}
	if len(entries) == 0 {
		return New, nil
	}
	kind, err := recognize(out, entries)
	if err != nil {
		return New, fail("%v", err)
	}
	switch {
	case kind == opt.Kind:
		return Own, nil
	case opt.Force:
		return Foreign, nil
	case kind != "":
		return New, fail("holds a sharebench %s output, not a %s output; choose another directory, or pass %s to write into it anyway", kind, opt.Kind, force)
	}
	return New, fail("refusing to write into a non-empty directory that sharebench did not write (no %s marker); choose a new or empty directory, or pass %s to write into it anyway", Marker, force)
}

// Prepare checks dir like Check, creates it with its parents (mode 0755) and, unless it is
// Foreign, writes the marker.
func Prepare(dir string, opt Options) (Status, error) {
	st, err := Check(dir, opt)
	if err != nil {
		return st, err
	}
	flag, _ := opt.names()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, fmt.Errorf("%s %s: %w", flag, dir, cause(err))
	}
	if st != Foreign {
		if err := WriteMarker(dir, opt.Kind); err != nil {
			return st, err
		}
	}
	return st, nil
}

// WriteMarker writes the marker of kind into the existing directory dir, atomically.
func WriteMarker(dir, kind string) error {
	p := filepath.Join(dir, Marker)
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, MarkerContent(kind)) {
		return nil
	}
	tmp, err := os.CreateTemp(dir, Marker+".tmp-")
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	_, err = tmp.Write(MarkerContent(kind))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("output: %s: %w", p, err)
	}
	return nil
}

// Recognize returns the kind of sharebench output dir is, or "" when it is none. A directory
// is an output of kind K when its marker names K (a run directory must moreover hold nothing
// but run files), or, for outputs written before markers existed, when:
//   - run: it holds summary.json or failure.json and nothing but the files of a run directory
//     (summary.json, jobs.csv, util.csv, decisions.jsonl, run.json, failure.json);
//   - reproduce: its README.md begins with the heading "sharebench reproduce" writes;
//   - campaign: it holds a campaign journal, journal.jsonl.
func Recognize(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	return recognize(dir, entries)
}

func recognize(dir string, entries []fs.DirEntry) (string, error) {
	names := map[string]fs.DirEntry{}
	for _, e := range entries {
		names[e.Name()] = e
	}
	onlyRunFiles := true
	for name, e := range names {
		if !e.Type().IsRegular() || !slices.Contains(runFiles, name) {
			onlyRunFiles = false
		}
	}
	file := func(name string) bool {
		e, ok := names[name]
		return ok && e.Type().IsRegular()
	}
	if file(Marker) {
		b, err := os.ReadFile(filepath.Join(dir, Marker))
		if err != nil {
			return "", err
		}
		kind := markerKind(b)
		if kind == Run && !onlyRunFiles {
			return "", nil // files were added to a run directory: replacing it would lose them
		}
		return kind, nil
	}
	switch {
	case onlyRunFiles && (file("summary.json") || file("failure.json")):
		return Run, nil
	case file("README.md") && firstLineHasPrefix(filepath.Join(dir, "README.md"), reproduceReadme):
		return Reproduce, nil
	case file("journal.jsonl"):
		return Campaign, nil
	}
	return "", nil
}

// markerKind returns the kind a marker file names, or "" if it is not a marker.
func markerKind(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	kind, ok := strings.CutPrefix(string(line), markerPrefix)
	if !ok {
		return ""
	}
	return strings.TrimSpace(kind)
}

func firstLineHasPrefix(path, prefix string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	return sc.Scan() && strings.HasPrefix(sc.Text(), prefix)
}

// MoveInto moves every entry of the directory src into dst, replacing entries of the same
// names and leaving the others alone, then removes src. It is how a command writes into a
// Foreign directory: its finished files are moved in one by one.
func MoveInto(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	if err := os.Remove(src); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

// resolve returns the absolute, symlink-free form of p; the part of p that does not exist yet
// is kept as written.
func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), nil
		}
		up := filepath.Dir(cur)
		if up == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = up
	}
}

// cause returns the reason of a path error without the path, which the messages name already.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
