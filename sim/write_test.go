package sim

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRunDirMode pins that a committed run directory has mode 0755 (less the umask), not the
// 0700 of the temporary directory it is written in.
func TestRunDirMode(t *testing.T) {
	root := t.TempDir()
	probe := filepath.Join(root, "probe")
	if err := os.Mkdir(probe, 0o777); err != nil {
		t.Fatal(err)
	}
	pi, err := os.Stat(probe)
	if err != nil {
		t.Fatal(err)
	}
	want := 0o755 & pi.Mode().Perm()
	dir := filepath.Join(root, "run")
	d, err := CreateRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile(SummaryFile, func(w io.Writer) error { _, err := io.WriteString(w, "{}\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("run directory mode %v, want %v", got, want)
	}
}
