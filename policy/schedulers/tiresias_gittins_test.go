package schedulers

import (
	"encoding/csv"
	"math"
	"os"
	"strconv"
	"testing"
)

// TestGittinsIndexAsMuri compares the index with the table that Muri's own parse_job_dist computes
// from the same distribution (testdata/gittins-index.csv, written by
// sim/testdata/muri/run_muri.py): every sample size s, sorted, and the index of a job whose
// service lies just below s. The values must be equal to the last bit, Python's rounding
// included.
func TestGittinsIndexAsMuri(t *testing.T) {
	f, err := os.Open("testdata/gittins-index.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGittinsIndex(tiresiasDurations(), 3250)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tiresiasDurations()); n != len(rows)-1 {
		t.Fatalf("%d samples, Muri's table has %d", n, len(rows)-1)
	}
	for _, r := range rows[1:] {
		size, err1 := strconv.ParseFloat(r[0], 64)
		want, err2 := strconv.ParseFloat(r[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad row %v", r)
		}
		for _, a := range []float64{size - 1, size - 0.5, math.Nextafter(size, 0)} {
			if got := g.Rank(a); got != want {
				t.Errorf("service %v: index %v, Muri %v", a, got, want)
			}
		}
	}
	last, _ := strconv.ParseFloat(rows[len(rows)-1][0], 64)
	if g.Rank(last) != 0 || g.Rank(last+1e6) != 0 {
		t.Errorf("above the largest sample: index %v, want 0", g.Rank(last))
	}
}

// TestPyRound pins Python's round on values whose nearest decimals tie: the exact binary value
// decides (2.675 is stored below 2.675), and exact halves go to even.
func TestPyRound(t *testing.T) {
	for _, c := range []struct {
		x    float64
		n    int
		want float64
	}{{2.675, 2, 2.67}, {0.125, 2, 0.12}, {0.375, 2, 0.38}, {2.5, 0, 2}, {3.5, 0, 4}, {1e-5 / 3, 5, 0}, {299.55549999, 4, 299.5555}} {
		if got := pyRound(c.x, c.n); got != c.want {
			t.Errorf("round(%v, %d) = %v, want %v", c.x, c.n, got, c.want)
		}
	}
}
