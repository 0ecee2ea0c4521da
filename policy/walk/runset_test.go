package walk

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/trace"
)

// TestFixedSetAsHeap: with fixed keys, the sorted list gives every call the victims the heap
// and its frontier give, in the same order, through puts (new jobs, re-keyed ones), removals,
// takes and the tentative rule's put-backs.
func TestFixedSetAsHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 300
	jobs := make([]*policy.Job, n)
	keys := make([]policy.Key, n)
	for i := range jobs {
		jobs[i] = &policy.Job{Job: trace.Job{ID: trace.JobID(i), Submit: time.Duration(rng.IntN(20))}, Idx: int32(i)}
	}
	key := func(j *policy.Job) policy.Key { return keys[j.Idx] }
	heap, fixed := runSet{}, runSet{}
	fixed.fixed = true
	heap.grow(n)
	fixed.grow(n)
	in := map[int]bool{}
	for call := range 3000 {
		now := time.Duration(call)
		// Between calls: jobs start, stop or are re-keyed.
		for range rng.IntN(8) {
			i := rng.IntN(n)
			if in[i] && rng.IntN(3) == 0 {
				heap.remove(jobs[i])
				fixed.remove(jobs[i])
				delete(in, i)
				continue
			}
			keys[i] = policy.Key{A: float64(rng.IntN(4)), B: int64(rng.IntN(3))}
			heap.put(entry(jobs[i], keys[i], now))
			fixed.put(entry(jobs[i], keys[i], now))
			in[i] = true
		}
		walkBoth(t, rng, call, now, key, &heap, &fixed)
	}
}

// TestDrainSetAsHeap: with remaining-time keys (runRemKey), the set ordered by finish bounds
// gives every call the victims the heap ordered by key bounds gives, in the same order: jobs
// start with and without restart overheads, stop, change rate (each settled, as the engine
// does), run past their end (keys of 0) and tie (same remaining time, same start); some never
// finish (keys saturate) or run for months (keys rounded to a few ns). Attempts take victims
// and put them back.
func TestDrainSetAsHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 200
	jobs := make([]*policy.Job, n)
	steps := []time.Duration{time.Second, 1500 * time.Millisecond, 333_333_333}
	for i := range jobs {
		jobs[i] = &policy.Job{
			Job:     trace.Job{ID: trace.JobID(i), Submit: time.Duration(rng.IntN(5)) * time.Second},
			Idx:     int32(i),
			Options: []policy.Option{{Excl: steps[rng.IntN(len(steps))]}},
		}
	}
	xis := []float64{1, 1.25, 1.7, 3}
	rate := func(j *policy.Job, xi float64) {
		j.Xi = xi
		j.P.Rate = 1 / (j.Options[j.Opt].Excl.Seconds() * xi)
	}
	heap, drain := runSet{}, runSet{drain: true}
	heap.grow(n)
	drain.grow(n)
	var now time.Duration
	for call := range 4000 {
		// Many calls at the same time, as the engine's plans that start jobs cause.
		if rng.IntN(3) > 0 {
			now += time.Duration(rng.IntN(200)) * time.Second / 7
		}
		key := runRemKey(now)
		put := func(j *policy.Job) {
			heap.put(entry(j, key(j), now))
			drain.put(entry(j, key(j), now))
		}
		for range rng.IntN(6) {
			j := jobs[rng.IntN(n)]
			switch {
			case !j.Running:
				j.Running = true
				j.P = policy.Progress{At: now, Rem: float64(100 * (1 + rng.IntN(4)))}
				switch rng.IntN(10) {
				case 0:
					j.P.Overhead = time.Duration(rng.IntN(50)) * time.Second
				case 1:
					j.P.Rem = 1e18 // a key beyond any horizon
				case 2, 3:
					// Months of work: keys of 10^16 ns, a few ns apart in the last place.
					j.P.Rem = 1e7*float64(1+rng.IntN(3)) + 0.5
				}
				rate(j, xis[rng.IntN(len(xis))])
				put(j)
			case rng.IntN(3) == 0:
				j.P.Advance(now)
				j.Running = false
				heap.remove(j)
				drain.remove(j)
			default:
				j.P.Advance(now)
				rate(j, xis[rng.IntN(len(xis))])
				put(j)
			}
		}
		walkBoth(t, rng, call, now, key, &heap, &drain)
	}
}

// TestFinishBound: a running job's key, however long it runs, stays at or below its finish
// bound less the time (0 once that is past), and strictly below the bound entry's first key,
// over jobs of a microsecond to years of work, step times of a microsecond to a day, slowdowns,
// restart overheads and settles far in the past; a job whose rate is off its step time by more
// than rounding gets no bound (Never).
func TestFinishBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	logU := func(lo, hi float64) float64 { return lo * math.Pow(hi/lo, rng.Float64()) }
	const cases = 600000
	bounded := 0
	for c := range cases {
		j := &policy.Job{Options: []policy.Option{{Excl: time.Duration(logU(1e6, 1e11))}}, Running: true}
		j.Xi = 1 + 9*rng.Float64()
		j.P = policy.Progress{Rem: logU(1, 1e9), At: time.Duration(logU(1, 1e16))}
		switch c % 3 {
		case 1: // keys below 2^40 ns, where the slack is its 16 ns alone
			j.Options[0].Excl = time.Duration(logU(1e3, 1e9))
			j.P.Rem = logU(1e-3, 1e3)
		case 2:
			j.Options[0].Excl = time.Duration(logU(1e3, 1e14))
			j.P.Rem = logU(1e-3, 1e9)
		}
		if rng.IntN(4) == 0 {
			j.P.Overhead = time.Duration(logU(1, 1e12))
		}
		j.P.Rate = 1 / (j.Options[0].Excl.Seconds() * j.Xi)
		off := rng.IntN(50) == 0
		if off {
			j.P.Rate *= 1 + 1e-13
		}
		full := j.RemTime(j.P.At)
		at := j.P.At + time.Duration(rng.Float64()*float64(full+j.P.Overhead))
		k := runRemKey(at)(j)
		e := finishBound(j, k, at)
		if off != (e == simtime.Never) && full < 1<<61 {
			t.Fatalf("case %d: rate off %v, bound %v", c, off, e)
		}
		if e == simtime.Never {
			continue
		}
		bounded++
		for range 4 {
			// Up to a tenth past the bound, where the key is 0.
			now := at + time.Duration(rng.Float64()*1.1*float64(e-at))
			if got := j.RemTime(now); got > max(e-now, 0) {
				t.Fatalf("case %d: key %v at %v beyond the bound %v (job %+v)", c, got, now, e-now, j.P)
			}
			if a := runRemKey(now)(j).A; a >= boundA(e, now) {
				t.Fatalf("case %d: first key %v at %v not below the bound entry's %v", c, a, now, boundA(e, now))
			}
		}
	}
	if bounded < cases/2 {
		t.Fatalf("only %d of %d cases bounded", bounded, cases)
	}
	// boundA converts without Duration.Seconds: strictly above it, up to 2^62 ns.
	for range 100000 {
		d := time.Duration(logU(1, 0x1p62))
		if a := boundA(d, 0); a <= d.Seconds() {
			t.Fatalf("boundA(%d) = %v, not above %v", int64(d), a, d.Seconds())
		}
	}
}

// walkBoth walks one call of the reference set ref and of set x side by side at now, and fails
// unless they give the same victims with the same keys: the walk takes victims and, now and
// then, puts those it took back, as a tentative attempt that failed does.
func walkBoth(t *testing.T, rng *rand.Rand, call int, now time.Duration, key func(*policy.Job) policy.Key, ref, x *runSet) {
	t.Helper()
	ref.start(now, key)
	x.start(now, key)
	var taken []ranked
	for step := 0; ; step++ {
		a, b := ref.lowest(key), x.lowest(key)
		if (a == nil) != (b == nil) || a != nil && (a.j != b.j || a.k != b.k) {
			t.Fatalf("call %d, step %d: lowest %v, reference %v", call, step, b, a)
		}
		if a == nil {
			return
		}
		if len(taken) > 0 && rng.IntN(6) == 0 {
			for _, r := range taken {
				ref.putBack(r)
				x.putBack(r)
			}
			taken = taken[:0]
			continue
		}
		ref.take()
		x.take()
		if rng.IntN(2) == 0 {
			taken = append(taken, *a)
		}
	}
}

// runRemKey is the SJF key of running jobs at now, as the drain set computes it.
func runRemKey(now time.Duration) func(*policy.Job) policy.Key {
	return func(j *policy.Job) policy.Key { k, _ := remKeyIters(j, now); return k }
}
