package golden

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update test flag: rewrite golden files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// maxDiffLines bounds the diff printed on a mismatch.
const maxDiffLines = 120

// Check compares got with the golden file at path. With -update it writes got to path
// (creating directories as needed) instead. On a mismatch it writes path+".got" and fails the
// test with a unified-style diff; on a match it removes a stale path+".got".
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		os.Remove(path + ".got")
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		writeGot(t, path, got)
		t.Fatalf("golden: %s does not exist; run the test with -update to create it (output in %s.got)", path, path)
	}
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if bytes.Equal(want, got) {
		os.Remove(path + ".got")
		return
	}
	writeGot(t, path, got)
	t.Errorf("golden: output differs from %s (got written to %s.got; accept with -update):\n%s",
		path, path, Diff(path, path+".got", want, got))
}

func writeGot(t testing.TB, path string, got []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("golden: %v", err)
	}
	if err := os.WriteFile(path+".got", got, 0o644); err != nil {
		t.Fatalf("golden: %v", err)
	}
}

// Diff returns a unified-style line diff of a and b with three lines of context, labelled
// with the names an and bn. The output is cut after a bounded number of lines.
func Diff(an, bn string, a, b []byte) string {
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", an, bn)
	lines := 0
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from ctx lines before the change to ctx lines after the last change that is
		// within 2*ctx unchanged lines of the previous one.
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aStart, bStart := ops[start].ai+1, ops[start].bi+1
		aN, bN := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", aStart, aN, bStart, bN)
		for _, op := range ops[start:end] {
			if lines >= maxDiffLines {
				sb.WriteString("... (diff truncated)\n")
				return sb.String()
			}
			sb.WriteByte(op.kind)
			sb.WriteString(op.text)
			sb.WriteByte('\n')
			lines++
		}
		i = end
	}
	return sb.String()
}

func splitLines(b []byte) []string {
	s := string(b)
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// op is one line of an edit script: ' ' keeps, '-' deletes from a, '+' inserts from b. ai and
// bi are the 0-based line positions in a and b at which the op applies.
type op struct {
	kind   byte
	text   string
	ai, bi int
}

// maxCells bounds the LCS table; larger middles are shown as a block replacement.
const maxCells = 4 << 20

// diffLines computes an edit script: common prefix and suffix, then an LCS of the middle when
// it is small enough, else a block replacement.
func diffLines(a, b []string) []op {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	var ops []op
	for i := 0; i < p; i++ {
		ops = append(ops, op{' ', a[i], i, i})
	}
	am, bm := a[p:len(a)-s], b[p:len(b)-s]
	if len(am)*len(bm) <= maxCells {
		ops = append(ops, lcs(am, bm, p)...)
	} else {
		for i, l := range am {
			ops = append(ops, op{'-', l, p + i, p})
		}
		for j, l := range bm {
			ops = append(ops, op{'+', l, p + len(am), p + j})
		}
	}
	for k := 0; k < s; k++ {
		ai, bi := len(a)-s+k, len(b)-s+k
		ops = append(ops, op{' ', a[ai], ai, bi})
	}
	return ops
}

func lcs(a, b []string, off int) []op {
	n, m := len(a), len(b)
	// l[i][j] = LCS length of a[i:], b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], off + i, off + j})
			i++
			j++
		case i < n && (j == m || l[i+1][j] >= l[i][j+1]):
			ops = append(ops, op{'-', a[i], off + i, off + j})
			i++
		default:
			ops = append(ops, op{'+', b[j], off + i, off + j})
			j++
		}
	}
	return ops
}
