package outdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// write creates the files (relative paths, parents included) below dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheck(t *testing.T) {
	runMarker := string(MarkerContent(Run))
	for _, tc := range []struct {
		name  string
		files map[string]string // below the output directory; nil: it does not exist
		kind  string
		force bool
		want  Status
		err   string // substring of the error; empty: no error
	}{
		{name: "absent", kind: Run, want: New},
		{name: "empty", files: map[string]string{}, kind: Run, want: New},
		{name: "run with marker", files: map[string]string{Marker: runMarker, "summary.json": "{}", "jobs.csv": ""}, kind: Run, want: Own},
		{name: "legacy simulate run", files: map[string]string{"summary.json": "{}", "jobs.csv": "", "util.csv": "", "decisions.jsonl": ""}, kind: Run, want: Own},
		{name: "legacy reproduce run", files: map[string]string{"summary.json": "{}", "run.json": "{}"}, kind: Run, want: Own},
		{name: "failed run", files: map[string]string{"failure.json": "{}"}, kind: Run, want: Own},
		{name: "run with a user's file", files: map[string]string{Marker: runMarker, "summary.json": "{}", "notes.txt": "mine"}, kind: Run, err: "sharebench did not write"},
		{name: "foreign", files: map[string]string{"thesis.tex": "x"}, kind: Run, err: "non-empty directory that sharebench did not write"},
		{name: "foreign forced", files: map[string]string{"thesis.tex": "x"}, kind: Run, force: true, want: Foreign},
		{name: "foreign summary.json only", files: map[string]string{"summary.json": "{}", "data": "x"}, kind: Run, err: "did not write"},
		{name: "bad marker", files: map[string]string{Marker: "hello\n"}, kind: Run, err: "did not write"},
		{name: "reproduce marker", files: map[string]string{Marker: string(MarkerContent(Reproduce)), "E1/x": ""}, kind: Reproduce, want: Own},
		{name: "legacy reproduce root", files: map[string]string{"README.md": "# sharebench reproduction outputs (label \"paper\")\n\nmore\n", "E1/tables/summary.md": ""}, kind: Reproduce, want: Own},
		{name: "other README", files: map[string]string{"README.md": "# my project\n"}, kind: Reproduce, err: "did not write"},
		{name: "reproduce root as run", files: map[string]string{Marker: string(MarkerContent(Reproduce))}, kind: Run, err: "holds a sharebench reproduce output, not a run output"},
		{name: "reproduce root as run forced", files: map[string]string{Marker: string(MarkerContent(Reproduce))}, kind: Run, force: true, want: Foreign},
		{name: "legacy campaign", files: map[string]string{"journal.jsonl": "", "cells/x/raw.jsonl": ""}, kind: Campaign, want: Own},
		{name: "campaign marker", files: map[string]string{Marker: string(MarkerContent(Campaign))}, kind: Campaign, want: Own},
		{name: "a file", kind: Run, err: "exists and is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if tc.files != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, dir, tc.files)
			}
			if tc.name == "a file" {
				write(t, filepath.Dir(dir), map[string]string{"out": "x"})
			}
			got, err := Check(dir, Options{Kind: tc.kind, Force: tc.force})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if !strings.HasPrefix(err.Error(), "--out "+dir+": ") || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q: want one line beginning with --out and the directory", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Check = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestCheckRefusesInputsEvenForced(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"data/trace.csv": "x", "data/sub/profile.json": "{}"})
	trace := filepath.Join(root, "data", "trace.csv")
	prof := filepath.Join(root, "data", "sub", "profile.json")
	for _, tc := range []struct{ out, input string }{
		{filepath.Join(root, "data"), trace},       // the input's directory
		{root, prof},                               // an ancestor of it
		{filepath.Join(root, "data", "sub"), prof}, // the input's own directory
		{filepath.Join(root, "data", "sub") + "/../sub/", prof},
	} {
		for _, force := range []bool{false, true} {
			_, err := Check(tc.out, Options{Kind: Run, Inputs: []string{tc.input}, Force: force})
			if err == nil || !strings.Contains(err.Error(), "holds the input "+tc.input) || !strings.Contains(err.Error(), "not even with --force") {
				t.Errorf("Check(%s, force %v) = %v; want the input refused", tc.out, force, err)
			}
		}
	}
	// A new directory next to the input, or below its directory, is fine.
	for _, out := range []string{filepath.Join(root, "data", "run"), filepath.Join(root, "elsewhere")} {
		if st, err := Check(out, Options{Kind: Run, Inputs: []string{trace, prof}}); err != nil || st != New {
			t.Errorf("Check(%s) = %v, %v; want New", out, st, err)
		}
	}
	// Through a symbolic link to the input's directory.
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(root, "data"), link); err != nil {
		t.Skip(err)
	}
	if _, err := Check(link, Options{Kind: Run, Inputs: []string{trace}, Force: true}); err == nil {
		t.Error("a link to the input's directory was accepted")
	}
}

func TestPrepare(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	st, err := Prepare(dir, Options{Kind: Reproduce})
	if err != nil || st != New {
		t.Fatalf("Prepare = %v, %v", st, err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o755&^umask(t) {
			t.Errorf("%s: mode %v, want 0755 less the umask", d, info.Mode().Perm())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, Marker))
	if err != nil || string(b) != string(MarkerContent(Reproduce)) {
		t.Fatalf("marker: %q, %v", b, err)
	}
	if kind, err := Recognize(dir); err != nil || kind != Reproduce {
		t.Errorf("Recognize = %q, %v", kind, err)
	}
	// Again: Own, the same bytes.
	if st, err := Prepare(dir, Options{Kind: Reproduce}); err != nil || st != Own {
		t.Fatalf("second Prepare = %v, %v", st, err)
	}
	// A forced foreign directory gets no marker.
	foreign := t.TempDir()
	write(t, foreign, map[string]string{"mine.txt": "x"})
	if st, err := Prepare(foreign, Options{Kind: Reproduce, Force: true}); err != nil || st != Foreign {
		t.Fatalf("forced Prepare = %v, %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(foreign, Marker)); err == nil {
		t.Error("marker written into a foreign directory")
	}
}

func TestMoveInto(t *testing.T) {
	src, dst := filepath.Join(t.TempDir(), "src"), t.TempDir()
	write(t, src, map[string]string{"summary.json": "new", "jobs.csv": "new"})
	write(t, dst, map[string]string{"summary.json": "old", "mine.txt": "kept"})
	if err := MoveInto(src, dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"summary.json": "new", "jobs.csv": "new", "mine.txt": "kept"} {
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(src); err == nil {
		t.Error("source directory left behind")
	}
}

// umask returns the process's umask, read from a directory created with mode 0777.
func umask(t *testing.T) os.FileMode {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe")
	if err := os.Mkdir(p, 0o777); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return 0o777 &^ info.Mode().Perm()
}
