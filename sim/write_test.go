package sim

import (
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
}
