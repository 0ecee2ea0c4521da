package walk

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
)

// TestFailsSurely draws residents, pending jobs and times and checks that failsSurely never
// rules out a share check that passes exactly, and that it rules out every one that fails by
// more than a millionth of the times involved (else the scan gains nothing).
func TestFailsSurely(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ruled int
	for range 200_000 {
		excl := time.Duration(1e6 + rng.Int64N(2e9)) // 1 ms to 2 s per iteration
		xi := 1 + 2*rng.Float64()
		if rng.IntN(4) == 0 {
			xi = 1
		}
		rem := float64(rng.Int64N(1e7)) * rng.Float64()
		p := policy.Progress{Rem: rem, At: time.Duration(rng.Int64N(1e15)), Rate: 1 / (excl.Seconds() * xi),
			Overhead: time.Duration(rng.Int64N(2)) * time.Duration(rng.Int64N(1e11))}
		sl := solo{excl: excl, xi: xi, p: p, t0: p.Rem * (float64(excl) * 1e-9) * xi}
		now := p.At + time.Duration(rng.Float64()*float64(rem)*float64(excl)*xi*1.2)
		exact := sl.remTime(1, now)
		etcA := exact * rng.Float64() * 4
		if rng.IntN(8) == 0 {
			// Near the boundary: the pending job's time that makes t_con equal t_seq, roughly.
			etcA = exact * (0.5 + rng.Float64())
		}
		etcWait := etcA * (0.5 + 0.5*rng.Float64())
		xiA, xiB := 0.95+1.5*rng.Float64(), 0.95+1.5*rng.Float64()
		share, tCon, tSeq := schedulers.ShareAt(etcA, etcWait, exact, xiA, xiB)
		sure := sl.failsSurely(now, etcA, etcWait, newTagPair(xiA, xiB))
		if sure && share {
			t.Fatalf("failsSurely for a check that passes: etcA=%v etcWait=%v etcB=%v xi=%v,%v", etcA, etcWait, exact, xiA, xiB)
		}
		if !sure && tCon-tSeq > 1e-6*(1+etcA+etcWait+exact) {
			t.Fatalf("failsSurely missed a check that fails by %v s: etcA=%v etcWait=%v etcB=%v xi=%v,%v", tCon-tSeq, etcA, etcWait, exact, xiA, xiB)
		}
		if sure {
			ruled++
		}
	}
	if ruled == 0 {
		t.Fatal("failsSurely ruled nothing out")
	}
}
