package walk

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sharebench/sharebench/policy/schedulers"
)

// TestFailedShareStaysFailed checks what greedy.fails relies on: a share check that fails keeps
// failing as the resident's remaining time shrinks, the pending job's times being fixed (with
// sub-batches, its own time is at least the one t_seq assumes).
func TestFailedShareStaysFailed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	failed := 0
	for range 100_000 {
		etcWait := 1 + 1e5*rng.Float64()
		etcA := etcWait
		if rng.IntN(2) == 0 {
			etcA *= 1 + 2*rng.Float64()
		}
		xiA, xiB := 1+2*rng.Float64(), 1+2*rng.Float64()
		e := 3e5 * rng.Float64()
		pass, tCon, tSeq := schedulers.ShareAt(etcA, etcWait, e, xiA, xiB)
		if pass {
			continue
		}
		failed++
		tol := 1e-12 * (etcA + etcWait + e) * (1 + xiA + xiB)
		for range 20 {
			e2 := e * rng.Float64()
			_, c2, s2 := schedulers.ShareAt(etcA, etcWait, e2, xiA, xiB)
			if c2-s2 < tCon-tSeq-tol && c2 < s2 {
				t.Fatalf("etcA %g etcWait %g ξ %g/%g: fails at %g (t_con − t_seq %g), passes at %g (%g)",
					etcA, etcWait, xiA, xiB, e, tCon-tSeq, e2, c2-s2)
			}
		}
	}
	if failed < 10_000 {
		t.Fatalf("only %d failing checks drawn", failed)
	}
}

// TestPlannedFailsWait checks the bound a failing check against a job placed earlier in the call
// gives: 0 on the check's boundary, within the margins, and positive away from it (where the check
// fails all through it, as TestFailedShareStaysFailed has it: that part cannot catch a bound too
// loose, which only rounding could expose).
func TestPlannedFailsWait(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	bounded, near := 0, 0
	for range 50_000 {
		etcWait := 1 + 1e5*rng.Float64()
		etcA := etcWait * (1 + rng.Float64())
		xiA, xiB := 1+2*rng.Float64(), 1+2*rng.Float64()
		e := 3e5 * rng.Float64()
		if rng.IntN(4) == 0 {
			// On the boundary, where the resident outlasts the pending job: t_con = t_seq.
			e = 2 * ((1-1/(2*xiB))*xiA*etcA - 0.5*etcWait)
			if e <= xiA*etcA/xiB {
				continue
			}
			near++
			var p placer
			p.wait = math.Inf(1)
			if pass, _, _ := schedulers.ShareAt(etcA, etcWait, e, xiA, xiB); !pass {
				p.plannedFails(etcA, etcWait, e, newTagPair(xiA, xiB))
				if p.wait != 0 {
					t.Fatalf("on the boundary (e %g, etcA %g, etcWait %g, ξ %g/%g): wait %g, want 0", e, etcA, etcWait, xiA, xiB, p.wait)
				}
			}
			continue
		}
		if pass, _, _ := schedulers.ShareAt(etcA, etcWait, e, xiA, xiB); pass {
			continue
		}
		var p placer
		p.wait = math.Inf(1)
		p.plannedFails(etcA, etcWait, e, newTagPair(xiA, xiB))
		if p.wait > 0 {
			bounded++
		}
		for k := range 20 {
			d := min(p.wait, e) * float64(k) / 20
			if pass, _, _ := schedulers.ShareAt(etcA, etcWait, e-d, xiA, xiB); pass {
				t.Fatalf("e %g etcA %g etcWait %g ξ %g/%g: wait %g, but the check passes after %g s", e, etcA, etcWait, xiA, xiB, p.wait, d)
			}
		}
	}
	if near < 1000 || bounded < 10_000 {
		t.Fatalf("%d boundary cases, %d bounded failures: the draws miss the cases", near, bounded)
	}
}
