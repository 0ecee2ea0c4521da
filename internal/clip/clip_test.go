package clip

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	if got := Quote("a,b"); got != `"a,b"` {
		t.Errorf("short: %s", got)
	}
	long := strings.Repeat("x", 1<<20)
	got := Quote(long)
	want := `"` + strings.Repeat("x", Max) + `…" (1048576 bytes)`
	if got != want {
		t.Errorf("long: %s", got)
	}
	// A cut never splits a character.
	s := strings.Repeat("é", Max)
	if q := Quote([]byte(s)); strings.ContainsRune(q, '\uFFFD') || !strings.Contains(q, "…") {
		t.Errorf("multi-byte: %s", q)
	}
	if got := String(long); len(got) != Max+len("…") {
		t.Errorf("String: %d bytes", len(got))
	}
}
