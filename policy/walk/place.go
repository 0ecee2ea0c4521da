package walk

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/cluster"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/policy/schedulers"
	"github.com/sharebench/sharebench/trace"
)

// partner is a job already on a candidate GPU, as a placement sees it.
type partner struct {
	job *policy.Job
	opt int
	etc float64 // remaining time in seconds at its current iteration time
}

// placer holds per-call scratch space and the lookup of jobs already on GPUs.
type placer struct {
	s *policy.State
	// Per-job scratch by Job.Idx, valid where the stamp is the call's (call) or the attempt's
	// (try), made on first need (sharing placements only): jobs placed earlier in this call (not
	// yet running; their view as partners is planned[plannedIn[i]]), the remaining times of
	// running jobs, and the index in checked of jobs share-checked.
	call, try uint32
	plannedAt []uint32
	plannedIn []int32
	planned   []partner
	etcAt     []uint32
	etc       []float64
	seenAt    []uint32
	seen      []int32
	hp, lp    []int
	tmp       []int
	checked   []checked
	// arena holds the GPU lists of this call's placements: the engine copies them before the
	// next call, so the memory is reused instead of allocated per placement.
	arena  []int
	order  []int
	gpusOf [][]int // usable GPUs of each checked job
	lpci   []int32 // by index in lp: the index in checked of its resident (bestBenefit2)
	solos  []solo  // by GPU (bestBenefit2; nil until first needed)
	// pairRows[gc*NCfg+cfg][tag] is the tagPair of a pending job of class gc and configuration
	// cfg with a resident of the tag, once looked up (slowdowns do not change during a run).
	pairRows [][]tagPair
	ix       shareIndex
	ixBest   []ixCand
	// wait is, after an attempt that found no placement, how many seconds from now it finds
	// none again at the least while the cluster changes only by placements (greedy.fails). A
	// share check that fails keeps failing while the resident's remaining time shrinks:
	// t_con − t_seq is continuous in it, with slope −1/2 where the resident outlasts the
	// pending job; where it does not, it grows as the time shrinks or is never negative, since
	// the pending job's own time is at least the one t_seq assumes (docs/paper.md §3.4). So only
	// the share index's rounding margins bound it; 0 means the attempt cannot tell.
	wait    float64
	unknown [][]int32 // by an option's tag: the tags lookedUp found not looked up, nil before
	// anyShare: placements share any GPU with room whose pair the profile has (first fit),
	// looking pairs up with the pending job first (tagPair.fwd); else they share-check.
	anyShare bool
	// notes holds, with Env.Explain, the partners of the last sharing placement found, for its
	// reason (shareReason): built as a string only for the placement the policy chooses.
	notes, bestNotes []checked
	why              []byte // shareReason's buffer
	// view is the Call that placements delegated to the declaration's rule see (delegate).
	view *policy.Call
}

// note records partner c of the sharing placement being found, with Env.Explain.
func (p *placer) note(c checked) {
	if p.s.Env.Explain {
		p.notes = append(p.notes, c)
	}
}

// shareReason explains a sharing placement by its partners' share checks.
func (p *placer) shareReason(notes []checked) string {
	// fmt's "share with %d: t_con=%.3fs < t_seq=%.3fs", without fmt: one per sharing start.
	b := p.why[:0]
	for i, c := range notes {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = strconv.AppendInt(append(b, "share with "...), int64(c.id), 10)
		b = strconv.AppendFloat(append(b, ": t_con="...), c.tCon, 'f', 3, 64)
		b = strconv.AppendFloat(append(b, "s < t_seq="...), c.tSeq, 'f', 3, 64)
		b = append(b, 's')
	}
	p.why = b
	return string(b)
}

// solo is a copy, kept in the slot of a GPU, of what bestBenefit2's share check reads of the
// running job alone on it: near saturation every attempt scans hundreds of such GPUs, and the
// copies keep what the scan reads together (docs/simulator.md, "Speed"). A copy is
// valid until the engine re-rates the job, which it does whenever it sets the job's progress,
// rate or placement (State.Rerated); the placer sees every call's State (reset).
type solo struct {
	id    trace.JobID
	idx   int32
	valid bool
	multi bool  // the job has more GPUs
	tag   int32 // of its option (Env.Tags): class, configuration, memory
	excl  time.Duration
	xi    float64
	p     policy.Progress
	t0    float64 // the remaining time in seconds at p.At, for failsSurely
	at    uint32  // the call etc was computed in
	etc   float64 // the remaining time in seconds at call at
}

// taken reports whether GPU g is already in p.tmp. With two jobs per GPU a GPU hosts one
// partner, so this only matters for larger MaxShare; p.tmp stays short.
func (p *placer) taken(g int) bool {
	if p.s.Cluster.Shape().MaxShare <= 2 {
		return false
	}
	return slices.Contains(p.tmp, g)
}

type checked struct {
	id   trace.JobID
	ok   bool
	gpu  int // the first candidate GPU it is on
	tCon float64
	tSeq float64
}

func (p *placer) reset(s *policy.State) {
	p.s = s
	p.arena = p.arena[:0]
	p.planned = p.planned[:0]
	if p.call++; p.call == 0 { // wrapped: forget every stamp
		clear(p.plannedAt)
		clear(p.etcAt)
		for g := range p.solos {
			p.solos[g].at = 0
		}
		p.call = 1
	}
	if p.solos == nil {
		p.updateIndex(s)
		return
	}
	if s.Resync {
		clear(p.solos)
		p.ix.off = true
		return
	}
	for _, j := range s.Rerated {
		if j.Running {
			for _, g := range j.On {
				p.solos[g].valid = false
			}
		}
	}
	p.updateIndex(s)
}

// residentOn returns the resident of candidate GPU g (one job, id) as the share check sees it,
// from the job itself, and, for a running job not placed in this call, copies it into the GPU's
// slot for the calls to come.
func (p *placer) residentOn(g int, id trace.JobID) (partner, error) {
	r, err := p.resident(id)
	if err != nil {
		return partner{}, err
	}
	if j := r.job; j.Running && p.plannedAt[j.Idx] != p.call {
		p.solos[g] = soloOf(j)
		p.solos[g].at, p.solos[g].etc = p.call, r.etc
	}
	return r, nil
}

// soloOf returns the copy of running job j (its remaining time at no call yet).
func soloOf(j *policy.Job) solo {
	o := j.Options[j.Opt]
	return solo{id: j.ID, idx: j.Idx, valid: true, multi: j.GPUs > 1, tag: o.Tag,
		excl: o.Excl, xi: j.Xi, p: j.P, t0: j.P.Rem * (float64(o.Excl) * 1e-9) * j.Xi}
}

// makeSolos makes the per-GPU copies, on first need.
func (p *placer) makeSolos() {
	if p.solos == nil {
		p.solos = make([]solo, p.s.Cluster.Shape().GPUs())
	}
}

// fresh reports whether slot sl still holds a copy of job id, running and not placed in this
// call.
func (p *placer) fresh(sl *solo, id trace.JobID) bool {
	return sl.valid && sl.id == id && sl.tag > 0 && p.plannedAt[sl.idx] != p.call
}

// pairOf returns the slowdowns of a pending job (class gc, configuration cfg) and a resident of
// the tag next to each other, with the bound failsSurely needs. They are looked up once per run:
// a lookup's only lasting effect is the set of missing and clamped pairs, which a repeat leaves
// as it is.
func (p *placer) pairOf(gc, cfg int, tag int32) tagPair {
	env := p.s.Env
	row := p.pairRow(gc, cfg)
	if tp := row[tag]; tp.known {
		return tp
	}
	r := env.Tags[tag]
	tp := tagPair{known: true, fwd: true, raw: row[tag].raw}
	xiA, okA := env.Pair(gc, cfg, r.GC, r.Cfg)
	xiB, okB := env.Pair(r.GC, r.Cfg, gc, cfg)
	if okA && okB {
		tp = newTagPair(xiA, xiB)
		tp.fwd, tp.raw = true, row[tag].raw
	}
	row[tag] = tp
	return tp
}

// pairRow returns the row of pairRows of class gc and configuration cfg.
func (p *placer) pairRow(gc, cfg int) []tagPair {
	env := p.s.Env
	if p.pairRows == nil {
		p.pairRows = make([][]tagPair, env.Classes()*env.NCfg)
	}
	i := gc*env.NCfg + cfg
	if p.pairRows[i] == nil {
		p.pairRows[i] = make([]tagPair, len(env.Tags))
	}
	return p.pairRows[i]
}

// lookedUp reports whether every slowdown an attempt of pending job j could look up (its options
// next to each tag with a GPU to share now, or with ever, unless now) was looked up before:
// skipping the attempt then leaves the run's missing and clamped pairs as they would be.
func (p *placer) lookedUp(j *policy.Job, now bool) bool {
	env, cl := p.s.Env, p.s.Cluster
	if p.unknown == nil {
		p.unknown = make([][]int32, len(env.Tags))
	}
	sole := cl.Sole()
	for _, o := range j.Options {
		if o.Tag <= 0 {
			return false
		}
		row := p.pairRow(j.GC, o.Cfg)
		l := p.unknown[o.Tag]
		if l == nil {
			// The tag fixes the class, configuration and memory: the tags a resident of which
			// leaves the option room.
			free := cl.Shape().GPUMemBytes - o.Mem
			l = make([]int32, 0, len(env.Tags))
			for t := 1; t < len(env.Tags); t++ {
				if env.Tags[t].Mem <= free {
					l = append(l, int32(t))
				}
			}
		}
		// Drop the tags looked up since; stop at one not looked up that matters.
		k, all := 0, true
		for i, t := range l {
			if row[t].known || p.anyShare && row[t].fwd {
				continue
			}
			l[k] = t
			k++
			if !now || int(t) < len(sole) && sole[t] > 0 {
				k += copy(l[k:], l[i+1:])
				all = false
				break
			}
		}
		p.unknown[o.Tag] = l[:k]
		if !all {
			return false
		}
	}
	return true
}

// mayTake reports whether pending job j could use GPU g now at one of its options: g is idle,
// or its one resident is paired with j, leaves room, and passes j's share check or comes within
// the rounding margins of passing (more jobs per GPU are not judged: yes).
func (p *placer) mayTake(j *policy.Job, g int) (bool, error) {
	cl := p.s.Cluster
	switch n := cl.Count(g); {
	case n == 0:
		return true, nil
	case n >= cl.Shape().MaxShare:
		return false, nil
	case n > 1:
		return true, nil
	}
	r, err := p.resident(cl.Jobs(g)[0])
	if err != nil {
		return false, err
	}
	tag := r.job.Options[r.opt].Tag
	if p.anyShare {
		// A pair the profile has is all first fit asks, and a pair's slowdowns never change.
		env, rc := p.s.Env, r.job.Options[r.opt].Cfg
		for _, o := range j.Options {
			if cl.FreeMem(g) >= o.Mem && !math.IsNaN(env.RawXi(j.GC, o.Cfg, rc)) && !math.IsNaN(env.RawXi(r.job.GC, rc, o.Cfg)) {
				return true, nil
			}
		}
		return false, nil
	}
	rem := j.RemIters(p.s.Now)
	etcWait := rem * j.Options[j.Fast].Excl.Seconds()
	for _, o := range j.Options {
		if cl.FreeMem(g) < o.Mem {
			continue
		}
		if tag <= 0 {
			return true, nil
		}
		tp := p.pairRow(j.GC, o.Cfg)[tag]
		if !tp.known {
			return true, nil
		}
		if !tp.ok {
			continue
		}
		etcA := rem * o.Excl.Seconds()
		_, tCon, tSeq := schedulers.ShareAt(etcA, etcWait, r.etc, tp.xiA, tp.xiB)
		if !(tCon-tSeq >= 1e-9*(1+etcA+etcWait+r.etc)*(1+tp.xiA+tp.xiB)) {
			return true, nil
		}
	}
	return false, nil
}

// newTagPair returns the tagPair of slowdowns xiA and xiB: t_con − t_seq moves by at most
// |1 − 1/(2ξA)|·ξB + 1 per second of the resident's remaining time.
func newTagPair(xiA, xiB float64) tagPair {
	return tagPair{ok: true, known: true, xiA: xiA, xiB: xiB, lip: math.Abs(1-1/(2*xiA))*xiB + 1}
}

// tagPair is what a share check needs of a pending job and a resident's tag.
type tagPair struct {
	ok, known     bool  // known: looked up (pairOf)
	fwd           bool  // looked up with the pending job first (pairOf, firstFit), which records the same pairs but one clamped
	raw           uint8 // tooFew's lookup, which records nothing: 0 not made, 1 usable, 2 not
	xiA, xiB, lip float64
}

// remTime returns the resident's remaining time in seconds at now, exactly as RemTime does.
func (sl *solo) remTime(call uint32, now time.Duration) float64 {
	if sl.at != call {
		sl.at, sl.etc = call, policy.RunningRemTime(sl.p.RemAt(now), sl.excl, sl.xi).Seconds()
	}
	return sl.etc
}

// failsSurely reports whether the share check of a pending job against this resident fails by
// more than any rounding: it estimates the resident's remaining time as t0 less the time run
// since, which is within 1e-12 of it relatively (plus the nanosecond rounding), and bounds how
// far that error and the rounding of the check can move t_con − t_seq. Near saturation most
// candidates fail by far, and this skips the exact remaining time for them; every other one
// gets the exact check, so decisions stay the same to the last bit.
func (sl *solo) failsSurely(now time.Duration, etcA, etcWait float64, tp tagPair) bool {
	dt := max(0, float64(now-sl.p.At-sl.p.Overhead)*1e-9)
	etcB := max(0, sl.t0-dt)
	errB := 1e-12*(sl.t0+dt) + 1e-8
	_, tCon, tSeq := schedulers.ShareAt(etcA, etcWait, etcB, tp.xiA, tp.xiB)
	tol := tp.lip*errB + 1e-12*(etcA+etcWait+tp.xiA*etcA+(tp.xiB+1)*(etcB+errB))
	return tCon-tSeq > tol // false for NaN: then the exact check decides
}

// nextTry starts a placement attempt's stamps (seen).
func (p *placer) nextTry() {
	if p.try++; p.try == 0 { // wrapped: forget every stamp
		clear(p.seenAt)
		p.try = 1
	}
}

// scratch makes the per-job scratch space.
func (p *placer) scratch() {
	if n := len(p.s.Jobs); len(p.plannedAt) < n {
		p.plannedAt, p.plannedIn = make([]uint32, n), make([]int32, n)
		p.etcAt, p.etc = make([]uint32, n), make([]float64, n)
		p.seenAt, p.seen = make([]uint32, n), make([]int32, n)
	}
}

// plan records j, placed in this call, as the partner share checks see.
func (p *placer) plan(j *policy.Job, as partner) {
	p.scratch()
	if p.plannedAt[j.Idx] == p.call {
		p.planned[p.plannedIn[j.Idx]] = as
		return
	}
	p.plannedAt[j.Idx], p.plannedIn[j.Idx] = p.call, int32(len(p.planned))
	p.planned = append(p.planned, as)
}

// isPlanned reports whether job id was placed earlier in this call.
func (p *placer) isPlanned(id trace.JobID) bool {
	p.scratch()
	j := p.s.Lookup(id)
	return j != nil && p.plannedAt[j.Idx] == p.call
}

// resident returns the view of a job on a GPU: a running job, or one placed earlier this call.
func (p *placer) resident(id trace.JobID) (partner, error) {
	p.scratch()
	j := p.s.Lookup(id)
	if j != nil && p.plannedAt[j.Idx] == p.call {
		return p.planned[p.plannedIn[j.Idx]], nil
	}
	if j == nil || !j.Running {
		return partner{}, fmt.Errorf("GPU holds job %d, which is neither running nor planned", id)
	}
	if p.etcAt[j.Idx] != p.call {
		p.etcAt[j.Idx], p.etc[j.Idx] = p.call, j.RemTime(p.s.Now).Seconds()
	}
	return partner{j, j.Opt, p.etc[j.Idx]}, nil
}

// split fills p.hp (idle GPUs) and p.lp (GPUs holding jobs, with room for one more) with the
// GPUs that have mem bytes free, in the order of the authors' scan (docs/paper.md §4.2 steps 1–2):
// nodes by number of resident jobs ascending, ties by node index, then GPU index. With idleOnly
// it collects only idle GPUs and stops at need of them.
func (p *placer) split(mem int64, need int, idleOnly bool) {
	cl := p.s.Cluster
	per, maxShare := cl.Shape().GPUsPerNode, cl.Shape().MaxShare
	p.hp, p.lp = p.hp[:0], p.lp[:0]
	set := cluster.WithOpen
	if idleOnly {
		set = cluster.WithIdle
	}
	cl.EachNode(set, func(n int) bool {
		for g := n * per; g < (n+1)*per; g++ {
			c := cl.Count(g)
			if c >= maxShare || cl.FreeMem(g) < mem {
				continue
			}
			if c == 0 {
				p.hp = append(p.hp, g)
				if idleOnly && len(p.hp) == need {
					return false
				}
			} else if !idleOnly {
				p.lp = append(p.lp, g)
			}
		}
		return true
	})
}

// exclusive places j on idle GPUs only, in scan order; ok is false if too few are idle.
func (p *placer) exclusive(j *policy.Job, opt int) ([]int, bool) {
	need := j.GPUs
	if p.s.Cluster.Idle() < need {
		return nil, false
	}
	p.split(j.Options[opt].Mem, need, true)
	if len(p.hp) < need {
		return nil, false
	}
	return p.keep(p.hp[:need]), true
}

// shareable reports whether j at option opt may join every resident of GPU g: the profile must
// know the pair in both directions.
func (p *placer) shareable(j *policy.Job, opt int, g int) (bool, error) {
	for _, id := range p.s.Cluster.Jobs(g) {
		r, err := p.resident(id)
		if err != nil {
			return false, err
		}
		_, ok := p.s.Env.Xi(j, opt, r.job, r.opt)
		if tag := r.job.Options[r.opt].Tag; tag > 0 {
			p.pairRow(j.GC, j.Options[opt].Cfg)[tag].fwd = true
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// tooFew reports, for a cluster with at most two jobs per GPU, whether fewer than j.GPUs GPUs
// could take j at option opt: idle ones, and ones with room whose resident the profile pairs with
// it, counted by the residents' tags (Cluster.Sole) without visiting the GPUs. Near saturation
// most placement attempts fail, and this is how. When it says so it makes the profile lookups a
// scan would have made (both ways when both is set), so that the run's missing and clamped pairs
// stay the same. ok is false when it cannot tell (more jobs per GPU, or an untagged resident).
func (p *placer) tooFew(j *policy.Job, opt int, both bool) (few, ok bool) {
	cl := p.s.Cluster
	sole := cl.Sole()
	if cl.Shape().MaxShare != 2 || sole[0] > 0 {
		return false, false
	}
	env, o := p.s.Env, j.Options[opt]
	room, usable := cl.Idle(), cl.Idle()
	free := cl.Shape().GPUMemBytes - o.Mem // a resident may use at most this much
	row := p.pairRow(j.GC, o.Cfg)
	for t, n := range sole {
		if n == 0 || env.Tags[t].Mem > free {
			continue
		}
		room += int(n)
		tp := &row[t]
		if tp.raw == 0 {
			r := env.Tags[t]
			tp.raw = 2
			if !math.IsNaN(env.RawXi(j.GC, o.Cfg, r.Cfg)) && !math.IsNaN(env.RawXi(r.GC, r.Cfg, o.Cfg)) {
				tp.raw = 1
			}
		}
		if tp.raw == 1 {
			usable += int(n)
		}
	}
	if room < j.GPUs {
		return true, true // the scan stops before any lookup
	}
	if usable >= j.GPUs {
		return false, true
	}
	for t, n := range sole {
		if r := env.Tags[t]; n > 0 && r.Mem <= free {
			if both {
				p.pairOf(j.GC, o.Cfg, int32(t)) // both ways, once per run
			} else {
				env.Pair(j.GC, o.Cfg, r.GC, r.Cfg)
				row[t].fwd = true
			}
		}
	}
	return true, true
}

// firstFit is the authors' merge placement (docs/paper.md §5.5): idle GPUs first, then GPUs holding
// jobs in candidate order, with no benefit check. Pairs missing from the profile are skipped.
func (p *placer) firstFit(j *policy.Job, opt int) (gpus []int, partners []trace.JobID, err error) {
	need := j.GPUs
	if cl := p.s.Cluster; cl.Shape().MaxShare != 2 || cl.Sole()[0] > 0 {
		p.wait = 0 // lookedUp cannot see the pairs of GPUs with more jobs, or untagged ones
	}
	if p.s.Cluster.Open() < need {
		return nil, nil, nil
	}
	if gpus, ok := p.exclusive(j, opt); ok {
		return gpus, nil, nil
	}
	if few, _ := p.tooFew(j, opt, false); few {
		return nil, nil, nil
	}
	p.split(j.Options[opt].Mem, need, false)
	if len(p.hp)+len(p.lp) < need {
		return nil, nil, nil
	}
	p.tmp = append(p.tmp[:0], p.hp...)
	for _, g := range p.lp {
		ok, err := p.shareable(j, opt, g)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			p.tmp = append(p.tmp, g)
			partners = appendNew(partners, p.s.Cluster.Jobs(g)...)
			if len(p.tmp) == need {
				return p.keep(p.tmp), partners, nil
			}
		}
	}
	return nil, nil, nil
}

// bestBenefit is schedulers.BestBenefit's share placement at one option, for at most two jobs per
// GPU (bestBenefitPlace): idle GPUs first; otherwise every distinct job on the candidate GPUs is
// share-checked, passing partners are taken in order of t_con, and their GPUs fill up the
// placement. score is the largest t_con of the partners used (0 for an exclusive placement).
func (p *placer) bestBenefit(j *policy.Job, opt int) (gpus []int, partners []trace.JobID, score float64, err error) {
	p.notes = p.notes[:0]
	need := j.GPUs
	if cl := p.s.Cluster; cl.Shape().MaxShare != 2 || cl.Sole()[0] > 0 {
		p.wait = 0 // lookedUp cannot see the pairs of GPUs with more jobs, or untagged ones
	}
	if p.s.Cluster.Open() < need {
		return nil, nil, 0, nil
	}
	o := j.Options[opt]
	if gpus, ok := p.exclusive(j, opt); ok {
		return gpus, nil, 0, nil
	}
	// Without enough GPUs whose resident the profile pairs with j, no share check can help.
	few, told := p.tooFew(j, opt, true)
	if few {
		return nil, nil, 0, nil
	}
	// A job preempted in this pass is still running on the tentative cluster: its remaining
	// work is counted at now, not at its last update.
	rem := j.RemIters(p.s.Now)
	etcA := rem * o.Excl.Seconds()
	etcWait := rem * j.Options[j.Fast].Excl.Seconds()
	if told && p.ix.on && !p.ix.off {
		// The index finds the partners without the scan.
		p.split(o.Mem, need, true)
		gpus, partners, score, ok, err := p.indexed(j, opt, etcA, etcWait)
		if ok || err != nil {
			return gpus, partners, score, err
		}
	}
	p.wait = 0 // the scans do not bound their answer in time
	p.split(o.Mem, need, false)
	if len(p.hp)+len(p.lp) < need {
		return nil, nil, 0, nil
	}
	return p.bestBenefit2(j, opt, etcA, etcWait)
}

// bestBenefit2 is bestBenefit past split: a GPU holds at most two jobs, so each candidate GPU has
// one resident.
func (p *placer) bestBenefit2(j *policy.Job, opt int, etcA, etcWait float64) (gpus []int, partners []trace.JobID, score float64, err error) {
	cl, env, cfg := p.s.Cluster, p.s.Env, j.Options[opt].Cfg
	need := j.GPUs
	p.checked = p.checked[:0]
	p.lpci = p.lpci[:0]
	p.scratch()
	p.nextTry()
	usable := 0 // candidate GPUs whose resident passes
	p.makeSolos()
	now := p.s.Now
	for _, g := range p.lp {
		id := cl.Jobs(g)[0]
		c := checked{id: id, gpu: g}
		sl := &p.solos[g]
		multi, idx := sl.multi, sl.idx
		fresh := p.fresh(sl, id)
		var r partner
		if !fresh {
			if r, err = p.residentOn(g, id); err != nil {
				return nil, nil, 0, err
			}
			multi, idx = r.job.GPUs > 1, r.job.Idx
		}
		if multi && p.seenAt[idx] == p.try {
			ci := p.seen[idx]
			p.lpci = append(p.lpci, ci)
			if p.checked[ci].ok {
				usable++
			}
			continue
		}
		if fresh {
			if tp := p.pairOf(j.GC, cfg, sl.tag); tp.ok && !sl.failsSurely(now, etcA, etcWait, tp) {
				c.ok, c.tCon, c.tSeq = schedulers.ShareAt(etcA, etcWait, sl.remTime(p.call, now), tp.xiA, tp.xiB)
			}
		} else {
			rgc, rc := r.job.GC, r.job.Options[r.opt].Cfg
			xiA, okA := env.Pair(j.GC, cfg, rgc, rc)
			xiB, okB := env.Pair(rgc, rc, j.GC, cfg)
			if okA && okB {
				c.ok, c.tCon, c.tSeq = schedulers.ShareAt(etcA, etcWait, r.etc, xiA, xiB)
			}
		}
		if !c.ok && !multi {
			p.lpci = append(p.lpci, -1) // fails: no entry in checked
			continue
		}
		ci := int32(len(p.checked))
		if multi {
			p.seenAt[idx], p.seen[idx] = p.try, ci
		}
		p.lpci = append(p.lpci, ci)
		p.checked = append(p.checked, c)
		if c.ok {
			usable++
		}
	}
	if len(p.hp)+usable < need {
		return nil, nil, 0, nil
	}
	if need-len(p.hp) == 1 {
		// One partner GPU to find: the passing partner of least t_con (the first one met among
		// equals), on the first candidate GPU it is on.
		best := -1
		for i, c := range p.checked {
			if c.ok && (best < 0 || c.tCon < p.checked[best].tCon) {
				best = i
			}
		}
		c := p.checked[best]
		p.note(c)
		p.tmp = append(p.tmp[:0], c.gpu)
		return p.keep(p.hp, p.tmp), []trace.JobID{c.id}, max(0, c.tCon), nil
	}
	// Passing partners by t_con; stable, so equal t_con keep their order of first appearance;
	// each gives its candidate GPUs in scan order until the job has its GPUs.
	p.order = p.order[:0]
	for i, c := range p.checked {
		if c.ok {
			p.order = append(p.order, i)
		}
	}
	slices.SortStableFunc(p.order, func(a, b int) int { return cmp.Compare(p.checked[a].tCon, p.checked[b].tCon) })
	for len(p.gpusOf) < len(p.checked) {
		p.gpusOf = append(p.gpusOf, nil)
	}
	for i := range p.checked {
		p.gpusOf[i] = p.gpusOf[i][:0]
	}
	for k, g := range p.lp {
		if ci := p.lpci[k]; ci >= 0 && p.checked[ci].ok {
			p.gpusOf[ci] = append(p.gpusOf[ci], g)
		}
	}
	p.tmp = p.tmp[:0]
	left := need - len(p.hp)
	for _, i := range p.order {
		if left <= 0 {
			break
		}
		c := p.checked[i]
		for _, g := range p.gpusOf[i] {
			if left == 0 {
				break
			}
			p.tmp = append(p.tmp, g)
			left--
		}
		partners = append(partners, c.id)
		score = max(score, c.tCon)
		p.note(c)
	}
	return p.keep(p.hp, p.tmp), partners, score, nil
}

// yarn is the authors' exclusive placement for the non-sharing baselines (docs/paper.md §5.9): a job of
// up to one node's GPUs goes to the first node (by ID) with enough idle GPUs; a larger job takes
// whole idle nodes plus one node for the remainder.
func (p *placer) yarn(j *policy.Job) []int {
	cl := p.s.Cluster
	need, per := j.GPUs, cl.Shape().GPUsPerNode
	if cl.Idle() < need {
		return nil
	}
	take := func(n, k int, gpus []int) []int {
		for g := n * per; g < (n+1)*per && k > 0; g++ {
			if cl.Count(g) == 0 {
				gpus = append(gpus, g)
				k--
			}
		}
		return gpus
	}
	if need <= per {
		if n := cl.NextIdleNode(need, 0); n >= 0 {
			return p.keep(take(n, need, p.tmp[:0]))
		}
		return nil
	}
	whole, rest := need/per, need%per
	gpus := p.tmp[:0]
	last := -1 // the last whole node taken
	for n := cl.NextIdleNode(per, 0); n >= 0 && whole > 0; n = cl.NextIdleNode(per, n+1) {
		gpus = take(n, per, gpus)
		last = n
		whole--
	}
	p.tmp = gpus // keep the room for next time
	if whole > 0 {
		return nil
	}
	if rest > 0 {
		for n := cl.NextIdleNode(rest, 0); n >= 0; n = cl.NextIdleNode(rest, n+1) {
			if n > last || cl.NodeIdle(n) < per {
				return p.keep(take(n, rest, gpus))
			}
		}
		return nil
	}
	return p.keep(gpus)
}

func appendNew(dst []trace.JobID, ids ...trace.JobID) []trace.JobID {
	for _, id := range ids {
		if !slices.Contains(dst, id) {
			dst = append(dst, id)
		}
	}
	return dst
}

// keep copies the concatenated GPU lists into the call's arena and returns the copy.
func (p *placer) keep(lists ...[]int) []int {
	n := len(p.arena)
	for _, l := range lists {
		p.arena = append(p.arena, l...)
	}
	return p.arena[n:len(p.arena):len(p.arena)]
}
