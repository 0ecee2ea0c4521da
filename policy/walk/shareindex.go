package walk

import (
	"math"
	"slices"
	"sort"

	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/trace"
)

// shareIndex finds, without scanning every GPU with room, the partners bestBenefit2 would pick
// for a job that must share k GPUs: the k passing GPUs of least t_con, ties in scan order. Near
// saturation such placements are most of SJF-BSBF's work, and a scan visits hundreds of GPUs
// for each.
//
// It holds, for each tag (class, configuration, memory), the GPUs whose one running job has
// that tag, sorted by the job's estimated finish time F (its remaining time is F − now, to
// within 10^-12 relatively and the nanosecond rounding). For a pending job and a tag, t_con −
// t_seq is piecewise linear in the resident's remaining time, with one piece on each side of
// the branch point of the share check, so the residents that may pass lie in at most two
// ranges of F, and t_con grows with F: each range is walked from its start (found by binary
// search), with the exact check, only while t_con may still beat the k-th best found. What
// rounding could blur is widened by margins far larger than it, and the exact check decides.
//
// The entries are kept up to date from State.Rerated (the engine re-rates a job whenever it
// sets its progress, rate or placement, which includes every change of who shares a GPU); a GPU
// whose only job left keeps its stale entry, which the walk skips, until a job lands on it.
// Within a call, placements only make GPUs full (skipped) or put a planned job alone on a GPU
// (checked separately). It is used only without preemption (victims' GPUs would hold jobs the
// index does not list), with two jobs per GPU at most, without untagged jobs, restart
// overheads or remaining times near the saturation of time.Duration (where the estimate would
// not bound the exact time); the reference executor runs the rule's scan, which tests compare
// it with.
type shareIndex struct {
	on, off bool // off: no longer usable in this run
	byTag   [][]ixEntry
	tagOf   []int32 // by GPU: the tag of its entry, 0 for none
	fOf     []float64
	planned []int // GPUs of this call's placements
}

type ixEntry struct {
	f float64
	g int32
}

func ixLess(a, b ixEntry) int {
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	}
	return int(a.g - b.g)
}

// updateIndex brings the index up to date at the start of a call.
func (p *placer) updateIndex(s *policy.State) {
	x := &p.ix
	x.planned = x.planned[:0]
	if !x.on || x.off {
		return
	}
	if s.Resync {
		x.off = true
		return
	}
	cl := s.Cluster
	if x.tagOf == nil {
		n := cl.Shape().GPUs()
		x.tagOf, x.fOf = make([]int32, n), make([]float64, n)
		x.byTag = make([][]ixEntry, len(s.Env.Tags))
		p.makeSolos()
	}
	for _, j := range s.Rerated {
		if !j.Running {
			continue
		}
		for _, g := range j.On {
			if t := x.tagOf[g]; t > 0 {
				l := x.byTag[t]
				if k, found := slices.BinarySearchFunc(l, ixEntry{x.fOf[g], int32(g)}, ixLess); found {
					x.byTag[t] = slices.Delete(l, k, k+1)
				}
				x.tagOf[g] = 0
			}
			if cl.Count(g) != 1 {
				continue
			}
			sl := soloOf(j)
			// Not indexable: scan from now on. (Below 10^9 s the exact remaining time never
			// saturates, so the estimate bounds it.)
			if sl.tag <= 0 || j.P.Overhead > 0 || !(sl.t0 < maxIndexedS) {
				x.off = true
				return
			}
			p.solos[g] = sl
			f := float64(j.P.At)*1e-9 + sl.t0
			e := ixEntry{f, int32(g)}
			l := x.byTag[sl.tag]
			k, _ := slices.BinarySearchFunc(l, e, ixLess)
			x.byTag[sl.tag] = slices.Insert(l, k, e)
			x.tagOf[g], x.fOf[g] = sl.tag, f
		}
	}
}

// maxIndexedS is the largest remaining time in seconds the index holds: far from the 9.2·10^9 s
// at which time.Duration, and with it a job's exact remaining time, saturates.
const maxIndexedS = 1e9

// ixRanges returns the ranges of remaining time e (at most two, lo ≤ hi) where the share check
// of a pending job (etcA, etcWait) against a resident of slowdowns tp may pass, up to δ in
// t_con − t_seq: for e ≤ κ (the resident finishes first when sharing) t_con − t_seq is
// 0.5·(etcA − etcWait) + s1·e, beyond it c2·ξA·etcA − 0.5·etcWait − 0.5·e.
func ixRanges(etcA, etcWait, delta float64, tp tagPair, buf *[2][2]float64) int {
	n := 0
	kappa := tp.xiA * etcA / tp.xiB
	s1 := (1-1/(2*tp.xiA))*tp.xiB - 1
	c := 0.5 * (etcA - etcWait)
	switch {
	case math.Abs(s1) < 1e-9: // flat, or nearly: the whole side
		buf[n] = [2]float64{0, kappa}
		n++
	case s1 > 0:
		if hi := min(kappa, (delta-c)/s1); hi >= 0 {
			buf[n] = [2]float64{0, hi}
			n++
		}
	default:
		if lo := max(0, (delta-c)/s1); lo <= kappa {
			buf[n] = [2]float64{lo, kappa}
			n++
		}
	}
	e2 := 2 * ((1-1/(2*tp.xiB))*tp.xiA*etcA - 0.5*etcWait - delta)
	buf[n] = [2]float64{max(kappa, e2), math.Inf(1)}
	return n + 1
}

// indexed is bestBenefit2 for a job that needs k = need − len(hp) shared GPUs (hp holds all the
// idle ones): the same placement, found with the index. bestBenefit2 takes passing partners by
// t_con, ties by first appearance in scan order, and each partner's GPUs in scan order; that is
// the k least GPUs by (t_con, the partner's first GPU in scan order, the GPU's place in scan
// order), which this keeps as it walks. ok is false when the index cannot answer (the caller
// scans).
func (p *placer) indexed(j *policy.Job, opt int, etcA, etcWait float64) (gpus []int, partners []trace.JobID, score float64, ok bool, err error) {
	cl, env, s := p.s.Cluster, p.s.Env, p.s
	if math.IsNaN(etcA+etcWait) || math.IsInf(etcA+etcWait, 0) {
		return nil, nil, 0, false, nil
	}
	mem := j.Options[opt].Mem
	cfg := j.Options[opt].Cfg
	free := cl.Shape().GPUMemBytes - mem
	nowS := float64(s.Now) * 1e-9
	k := j.GPUs - len(p.hp)
	p.scratch()
	scanKey := func(g int) int { return cl.Workload(cl.Node(g))*cl.Shape().GPUs() + g }
	// lp reports whether GPU g is one bestBenefit2 scans.
	lp := func(g int) bool { return cl.Count(g) == 1 && cl.FreeMem(g) >= mem }
	best := p.ixBest[:0]
	consider := func(c ixCand) {
		if len(best) == k && !c.before(best[k-1]) {
			return
		}
		i, _ := slices.BinarySearchFunc(best, c, func(a, b ixCand) int {
			if a.before(b) {
				return -1
			}
			return 1
		})
		if len(best) == k {
			best = best[:k-1]
		}
		best = slices.Insert(best, i, c)
	}
	// first returns a resident's first GPU in scan order among those bestBenefit2 scans.
	first := func(id trace.JobID, g int, multi bool, on []int) int {
		r := scanKey(g)
		if multi {
			for _, h := range on {
				if h != g && lp(h) && cl.Jobs(h)[0] == id {
					r = min(r, scanKey(h))
				}
			}
		}
		return r
	}
	var rs [2][2]float64
	row := p.pairRow(j.GC, cfg)
	for t, n := range cl.Sole() {
		if t == 0 || n == 0 || env.Tags[t].Mem > free {
			continue
		}
		tp := row[t]
		if !tp.known {
			tp = p.pairOf(j.GC, cfg, int32(t))
		}
		l := p.ix.byTag[t]
		if !tp.ok || len(l) == 0 {
			continue
		}
		eMax := max(0, l[len(l)-1].f-nowS)
		errB := 1e-12*(l[len(l)-1].f+nowS) + 1e-8
		delta := 1e-11 * (1 + etcA + etcWait + tp.xiA*etcA + (tp.xiB+1)*(eMax+errB))
		if math.IsNaN(delta) || math.IsInf(delta, 0) {
			return nil, nil, 0, false, nil
		}
		next := 0 // the walk of a range starts where the previous one stopped, at the latest
		for _, r := range rs[:ixRanges(etcA, etcWait, delta, tp, &rs)] {
			// Widen by the estimate's error and the range ends' own rounding.
			lo := r[0] - errB - 1e-9*(1+r[0])
			hi := r[1] + errB + 1e-9*(1+r[1])
			if l[0].f-nowS > hi {
				p.failsFor(l[0].f-nowS-hi, errB)
				continue
			}
			if max(0, l[len(l)-1].f-nowS) < lo {
				continue // below the range, the residents only move away from it
			}
			i := 0 // with lo ≤ 0, every resident whose estimate is clamped at 0 too
			if lo > 0 {
				i = sort.Search(len(l), func(i int) bool { return l[i].f >= lo+nowS })
			}
			// Widened, the ranges may overlap (near the branch point): no GPU is walked twice.
			i = max(i, next)
			for ; i < len(l) && l[i].f-nowS <= hi; i++ {
				e := l[i]
				if len(best) == k {
					// t_con grows with the remaining time: from here on it can only be larger.
					_, tc, _ := schedulers.ShareCheck(etcA, max(0, e.f-nowS-errB), tp.xiA, tp.xiB)
					if tc-delta > best[k-1].tCon {
						break
					}
				}
				g := int(e.g)
				if cl.Count(g) != 1 {
					continue
				}
				sl := &p.solos[g]
				if !p.fresh(sl, cl.Jobs(g)[0]) {
					continue
				}
				pass, tCon, tSeq := schedulers.ShareAt(etcA, etcWait, sl.remTime(p.call, s.Now), tp.xiA, tp.xiB)
				if pass {
					var on []int
					if sl.multi {
						on = s.Lookup(sl.id).On
					}
					consider(ixCand{tCon, tSeq, first(sl.id, g, sl.multi, on), scanKey(g), g, sl.id})
				} else {
					p.wait = 0 // in the range: within the margins, it may pass at any time
				}
			}
			if i < len(l) {
				// The resident nearest above the range reaches it first.
				p.failsFor(l[i].f-nowS-hi, errB)
			}
			next = i
		}
	}
	// Jobs placed alone on a GPU earlier in this call are candidates the index does not hold.
	for _, g := range p.ix.planned {
		if !lp(g) {
			continue
		}
		id := cl.Jobs(g)[0]
		r, err := p.resident(id)
		if err != nil {
			return nil, nil, 0, false, err
		}
		rgc, rc := r.job.GC, r.job.Options[r.opt].Cfg
		xiA, okA := env.Pair(j.GC, cfg, rgc, rc)
		xiB, okB := env.Pair(rgc, rc, j.GC, cfg)
		if !okA || !okB {
			continue
		}
		if pass, tCon, tSeq := schedulers.ShareAt(etcA, etcWait, r.etc, xiA, xiB); pass {
			consider(ixCand{tCon, tSeq, first(id, g, r.job.GPUs > 1, p.ix.planned), scanKey(g), g, id})
		} else {
			p.plannedFails(etcA, etcWait, r.etc, newTagPair(xiA, xiB))
		}
	}
	p.ixBest = best
	if len(best) < k {
		return nil, nil, 0, true, nil
	}
	p.tmp = p.tmp[:0]
	for i, c := range best {
		p.tmp = append(p.tmp, c.g)
		if i > 0 && c.id == best[i-1].id {
			continue
		}
		partners = append(partners, c.id)
		score = max(score, c.tCon)
		p.note(checked{id: c.id, tCon: c.tCon, tSeq: c.tSeq})
	}
	return p.keep(p.hp, p.tmp), partners, score, true, nil
}

// failsFor notes, for a failing attempt (see placer.wait), a resident that needs wait seconds to
// reach a range where it may pass; errB bounds the error of its estimated finish time.
func (p *placer) failsFor(wait, errB float64) {
	// A microsecond and the estimate's error below the exact time, which rounding cannot reach.
	p.wait = max(0, min(p.wait, wait-errB-1e-6-1e-9*wait))
}

// plannedFails is failsFor for a job placed alone earlier in this call, whose remaining time e
// the index does not hold: it fails the share check now, and may pass once e reaches one of the
// check's ranges.
func (p *placer) plannedFails(etcA, etcWait, e float64, tp tagPair) {
	const errB = 1e-8
	delta := 1e-11 * (1 + etcA + etcWait + tp.xiA*etcA + (tp.xiB+1)*(e+errB))
	if math.IsNaN(delta) || math.IsInf(delta, 0) {
		p.wait = 0
		return
	}
	var rs [2][2]float64
	for _, r := range rs[:ixRanges(etcA, etcWait, delta, tp, &rs)] {
		lo := r[0] - errB - 1e-9*(1+r[0])
		hi := r[1] + errB + 1e-9*(1+r[1])
		switch {
		case e > hi:
			p.failsFor(e-hi, errB)
		case e >= lo:
			p.wait = 0
		}
	}
}

// ixCand is a GPU whose resident passes the share check, with its place in bestBenefit2's
// order.
type ixCand struct {
	tCon, tSeq float64
	first, key int // the resident's first GPU and this GPU, in scan order
	g          int
	id         trace.JobID
}

func (a ixCand) before(b ixCand) bool {
	if a.tCon != b.tCon {
		return a.tCon < b.tCon
	}
	if a.first != b.first {
		return a.first < b.first
	}
	return a.key < b.key
}
