package tmpdir

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestCreateCleansOnlyStale(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	parent := t.TempDir()
	stale := filepath.Join(parent, ".run.tmp-stale")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stale, "jobs.csv"), []byte("x"), 0o644)
	other := filepath.Join(parent, ".other.tmp-1")
	os.Mkdir(other, 0o755)
	file := filepath.Join(parent, ".run.tmp-file")
	os.WriteFile(file, nil, 0o644)

	live, err := Create(parent, ".run.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if exists(stale) {
		t.Errorf("the stale %s survived", stale)
	}
	if !exists(other) || !exists(file) {
		t.Errorf("Clean removed what does not match or is not a directory")
	}
	fi, _ := os.Stat(live.Path())
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	// A second Create leaves the live one alone.
	second, err := Create(parent, ".run.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if !exists(live.Path()) {
		t.Fatalf("Create removed the live directory %s", live.Path())
	}
	live.Release()
	if err := Clean(parent, ".run.tmp-"); err != nil {
		t.Fatal(err)
	}
	if exists(live.Path()) {
		t.Errorf("a released directory is stale and should be cleaned")
	}
	if !exists(second.Path()) {
		t.Errorf("Clean removed the live %s", second.Path())
	}
	if err := second.Remove(); err != nil || exists(second.Path()) {
		t.Errorf("Remove: %v", err)
	}
}

// TestKilledHolder: a directory whose writer dies by SIGKILL is left behind, and the next
// Create removes it; while the writer lives it is kept.
func TestKilledHolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	if dir := os.Getenv("TMPDIR_TEST_HOLD"); dir != "" {
		d, err := Create(dir, ".run.tmp-")
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(d.Path() + "\n")
		select {} // hold until killed
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHolder$")
	cmd.Env = append(os.Environ(), "TMPDIR_TEST_HOLD="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %v", err)
	}
	held := strings.TrimSpace(line)
	if err := Clean(parent, ".run.tmp-"); err != nil {
		t.Fatal(err)
	}
	if !exists(held) {
		t.Fatalf("Clean removed %s while its writer lives", held)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	if !exists(held) {
		t.Fatalf("nothing left behind: the test does not test anything")
	}
	d, err := Create(parent, ".run.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	if exists(held) {
		t.Errorf("the killed writer's %s survived the next Create", held)
	}
}
