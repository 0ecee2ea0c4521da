package main

import (
	"strings"
	"testing"
	"time"
)

// TestProgressLine checks the line's pace: nothing in the run's first second, then at most
// one line every half second, and a clear only after a line.
func TestProgressLine(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	now := time.Unix(0, 0)
	p := newProgressLine(&b, func() time.Time { return now })
	at := func(ms int, done int) {
		now = time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond)
		p.report(done, 200)
	}
	at(900, 10)  // too early
	at(1200, 20) // drawn
	at(1500, 30) // too soon after
	at(1800, 50) // drawn
	p.clear()
	want := "\r\033[Ksimulate: 20 of 200 jobs finished (10%), 1s" + "\r\033[Ksimulate: 50 of 200 jobs finished (25%), 2s" + "\r\033[K"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var quiet strings.Builder
	newProgressLine(&quiet, time.Now).clear()
	(*progressLine)(nil).clear()
	if quiet.Len() != 0 {
		t.Errorf("a line never drawn wrote %q on clear", quiet.String())
	}
}
