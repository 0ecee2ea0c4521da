package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	a := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	b := "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\nthirteen\n"
	got := Diff("want", "got", []byte(a), []byte(b))
	want := `--- want
+++ got
@@ -1,7 +1,7 @@
 one
 two
 three
-four
+FOUR
 five
 six
 seven
@@ -10,3 +10,4 @@
 ten
 eleven
 twelve
+thirteen
`
	if got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
	if d := Diff("a", "b", []byte(a), []byte(a)); strings.Contains(d, "@@") {
		t.Errorf("Diff of equal inputs has hunks:\n%s", d)
	}
}

func TestCheckMatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".got", []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, path, []byte("same\n"))
	if _, err := os.Stat(path + ".got"); !os.IsNotExist(err) {
		t.Errorf("stale .got file not removed: %v", err)
	}
}
