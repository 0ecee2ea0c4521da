package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestExactSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 12 * time.Second: "12", 12500 * time.Millisecond: "12.5", 12*time.Second + 1: "12.000000001",
		-1500 * time.Millisecond: "-1.5", 1<<62 + 7: "4611686018.427387911",
	} {
		if got := string(appendExactSeconds(nil, d)); got != want {
			t.Errorf("appendExactSeconds(%d) = %s, want %s", int64(d), got, want)
		}
	}
	// Against the digits written out and trimmed, for durations of every fraction length.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		d := time.Duration(rng.Int64N(1<<50)) / time.Duration(pow10[rng.IntN(10)])
		if rng.IntN(2) == 0 {
			d = -d
		}
		a := max(d, -d)
		want := strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%d.%09d", a/time.Second, a%time.Second), "0"), ".")
		if d < 0 {
			want = "-" + want
		}
		if got := string(appendExactSeconds(nil, d)); got != want {
			t.Fatalf("appendExactSeconds(%d) = %s, want %s", int64(d), got, want)
		}
	}
}

var pow10 = [10]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

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

// TestAppendQuote: the fast path writes what strconv.AppendQuote writes.
func TestAppendQuote(t *testing.T) {
	for _, s := range []string{"", "0-1", "idle GPUs", `say "hi"`, `a\b`, "tab\there", "t_con=1.5s < t_seq=2s", "ξ ≥ 1", "\x7f", "~",
		"waited 1.000s ≥ 1 × attained service", "bad \xff utf-8", "cut \xe2\x89", "nbsp\u00a0", "ls\u2028", "bom\ufeff", "\U0001F600", "é\"", "\u00e9\\"} {
		if got, want := string(appendQuote(nil, s)), strconv.Quote(s); got != want {
			t.Errorf("appendQuote(%q) = %s, want %s", s, got, want)
		}
	}
	for c := range 256 { // every byte, alone and between plain ones
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "b"} {
			if got, want := string(appendQuote(nil, s)), strconv.Quote(s); got != want {
				t.Errorf("appendQuote(%q) = %s, want %s", s, got, want)
			}
		}
	}
}
