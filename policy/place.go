package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"sharebench/cluster"
	"sharebench/trace"
)

// candidates caches the GPUs that can take another job, in the order the authors' placement
// scans them: nodes by number of resident jobs ascending (stable, so ties keep node order), then
// GPU index order (SPEC.md §4.2 steps 1–2). It is rebuilt only when the cluster changes.
type candidates struct {
	version uint64
	built   bool
	nodes   []int
	gpus    []int
	buckets [][]int
}

func (c *candidates) get(cl *cluster.Cluster) []int {
	if c.built && c.version == cl.Version() {
		return c.gpus
	}
	c.built, c.version = true, cl.Version()
	sh := cl.Shape()
	// Counting sort of nodes by workload: stable and linear.
	maxW := sh.GPUsPerNode * sh.MaxShare
	if len(c.buckets) != maxW+1 {
		c.buckets = make([][]int, maxW+1)
	}
	for i := range c.buckets {
		c.buckets[i] = c.buckets[i][:0]
	}
	for n := range sh.Nodes {
		if cl.NodeOpen(n) > 0 {
			w := min(cl.Workload(n), maxW)
			c.buckets[w] = append(c.buckets[w], n)
		}
	}
	c.gpus = c.gpus[:0]
	for _, b := range c.buckets {
		for _, n := range b {
			for g := n * sh.GPUsPerNode; g < (n+1)*sh.GPUsPerNode; g++ {
				if cl.Count(g) < sh.MaxShare {
					c.gpus = append(c.gpus, g)
				}
			}
		}
	}
	return c.gpus
}

// partner is a job already on a candidate GPU, as a placement sees it.
type partner struct {
	job *Job
	opt int
	etc float64 // remaining time in seconds at its current iteration time
}

// placer holds per-call scratch space and the lookup of jobs already on GPUs.
type placer struct {
	s     *State
	cands candidates
	// planned holds jobs placed earlier in this call (not yet running).
	planned map[trace.JobID]partner
	hp, lp  []int
	tmp     []int
	checked []checked
}

type checked struct {
	id   trace.JobID
	ok   bool
	tCon float64
	tSeq float64
}

func (p *placer) reset(s *State) {
	p.s = s
	clear(p.planned)
	if p.planned == nil {
		p.planned = map[trace.JobID]partner{}
	}
}

// resident returns the view of a job on a GPU: a running job, or one placed earlier this call.
func (p *placer) resident(id trace.JobID) (partner, error) {
	if q, ok := p.planned[id]; ok {
		return q, nil
	}
	j := p.s.byID(id)
	if j == nil || !j.Running {
		return partner{}, fmt.Errorf("GPU holds job %d, which is neither running nor planned", id)
	}
	return partner{j, j.Opt, j.RemTime(p.s.Now).Seconds()}, nil
}

// split fills p.hp (idle GPUs) and p.lp (GPUs holding jobs) with the candidate GPUs that have
// mem bytes free, stopping early once need idle GPUs are found when stopAtIdle is set.
func (p *placer) split(mem int64, need int, stopAtIdle bool) {
	cl := p.s.Cluster
	p.hp, p.lp = p.hp[:0], p.lp[:0]
	for _, g := range p.cands.get(cl) {
		if cl.FreeMem(g) < mem {
			continue
		}
		if cl.Count(g) == 0 {
			p.hp = append(p.hp, g)
			if stopAtIdle && len(p.hp) == need {
				return
			}
		} else {
			p.lp = append(p.lp, g)
		}
	}
}

// exclusive places j on idle GPUs only, in candidate order; ok is false if too few are idle.
func (p *placer) exclusive(j *Job, opt int) ([]int, bool) {
	need := j.GPUs
	if p.s.Cluster.Idle() < need {
		return nil, false
	}
	p.split(j.Options[opt].Mem, need, true)
	if len(p.hp) < need {
		return nil, false
	}
	return slices.Clone(p.hp[:need]), true
}

// shareable reports whether j at option opt may join every resident of GPU g: the profile must
// know the pair in both directions.
func (p *placer) shareable(j *Job, opt int, g int) (bool, error) {
	for _, id := range p.s.Cluster.Jobs(g) {
		r, err := p.resident(id)
		if err != nil {
			return false, err
		}
		if _, ok := p.s.Env.Xi(j, opt, r.job, r.opt); !ok {
			return false, nil
		}
	}
	return true, nil
}

// firstFit is the authors' merge placement (SPEC.md §5.5): idle GPUs first, then GPUs holding
// jobs in candidate order, with no benefit check. Pairs missing from the profile are skipped.
func (p *placer) firstFit(j *Job, opt int) (gpus []int, partners []trace.JobID, err error) {
	need := j.GPUs
	if p.s.Cluster.Open() < need {
		return nil, nil, nil
	}
	p.split(j.Options[opt].Mem, need, false)
	if len(p.hp) >= need {
		return slices.Clone(p.hp[:need]), nil, nil
	}
	if len(p.hp)+len(p.lp) < need {
		return nil, nil, nil
	}
	gpus = slices.Clone(p.hp)
	for _, g := range p.lp {
		ok, err := p.shareable(j, opt, g)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			gpus = append(gpus, g)
			partners = appendNew(partners, p.s.Cluster.Jobs(g)...)
			if len(gpus) == need {
				return gpus, partners, nil
			}
		}
	}
	return nil, nil, nil
}

// bestBenefit is the authors' bsbf placement (SPEC.md §4.2): idle GPUs first; otherwise every
// distinct job on the candidate GPUs is share-checked, passing partners are taken in order of
// t_con, and their GPUs fill up the placement. score is the largest t_con of the partners used
// (0 for an exclusive placement).
func (p *placer) bestBenefit(j *Job, opt int) (gpus []int, partners []trace.JobID, score float64, why string, err error) {
	need := j.GPUs
	if p.s.Cluster.Open() < need {
		return nil, nil, 0, "", nil
	}
	o := j.Options[opt]
	p.split(o.Mem, need, false)
	if len(p.hp) >= need {
		return slices.Clone(p.hp[:need]), nil, 0, "idle GPUs", nil
	}
	if len(p.hp)+len(p.lp) < need {
		return nil, nil, 0, "", nil
	}
	etcA := j.P.Rem * o.Excl.Seconds()
	p.checked = p.checked[:0]
	for _, g := range p.lp {
		for _, id := range p.s.Cluster.Jobs(g) {
			if slices.ContainsFunc(p.checked, func(c checked) bool { return c.id == id }) {
				continue
			}
			r, err := p.resident(id)
			if err != nil {
				return nil, nil, 0, "", err
			}
			c := checked{id: id}
			xiA, okA := p.s.Env.Xi(j, opt, r.job, r.opt)
			xiB, okB := p.s.Env.Xi(r.job, r.opt, j, opt)
			if okA && okB {
				c.ok, c.tCon, c.tSeq = ShareCheck(etcA, r.etc, xiA, xiB)
			}
			p.checked = append(p.checked, c)
		}
	}
	// Stable: partners with equal t_con keep their order of first appearance.
	slices.SortStableFunc(p.checked, func(a, b checked) int {
		if a.ok != b.ok {
			if a.ok {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.tCon, b.tCon)
	})
	okFor := func(g int) bool {
		for _, id := range p.s.Cluster.Jobs(g) {
			i := slices.IndexFunc(p.checked, func(c checked) bool { return c.id == id })
			if !p.checked[i].ok {
				return false
			}
		}
		return true
	}
	p.tmp = p.tmp[:0]
	have := len(p.hp)
	for _, c := range p.checked {
		if !c.ok || have+len(p.tmp) >= need {
			break
		}
		used := false
		for _, g := range p.lp {
			if slices.Contains(p.tmp, g) || !slices.Contains(p.s.Cluster.Jobs(g), c.id) || !okFor(g) {
				continue
			}
			p.tmp = append(p.tmp, g)
			used = true
			if have+len(p.tmp) >= need {
				break
			}
		}
		if used {
			partners = append(partners, c.id)
			score = max(score, c.tCon)
			if p.s.Env.Explain {
				why += fmt.Sprintf("share with %d: t_con=%.3fs < t_seq=%.3fs; ", c.id, c.tCon, c.tSeq)
			}
		}
	}
	if have+len(p.tmp) < need {
		return nil, nil, 0, "", nil
	}
	gpus = append(slices.Clone(p.hp), p.tmp...)
	return gpus, partners, score, strings.TrimSuffix(why, "; "), nil
}

// consolidated tries to fit the whole job inside one node, best-fit node first (SPEC.md §5.6):
// idle GPUs of the node first, then GPUs of partners on the node (share-checked when check is
// set, first-fit otherwise). It returns nil when no single node works.
func (p *placer) consolidated(j *Job, opt int, check bool) (gpus []int, partners []trace.JobID, score float64, err error) {
	cl := p.s.Cluster
	sh := cl.Shape()
	need := j.GPUs
	if need > sh.GPUsPerNode || cl.Open() < need {
		return nil, nil, 0, nil
	}
	type nodeKey struct{ n, fit, idle, work int }
	keys := make([]nodeKey, 0, sh.Nodes)
	for n := range sh.Nodes {
		if cl.NodeOpen(n) < need {
			continue
		}
		idle := cl.NodeIdle(n)
		fit := sh.GPUsPerNode
		if idle >= need {
			fit = idle - need
		}
		keys = append(keys, nodeKey{n, fit, idle, cl.Workload(n)})
	}
	slices.SortStableFunc(keys, func(a, b nodeKey) int {
		return cmp.Or(cmp.Compare(a.fit, b.fit), cmp.Compare(b.idle, a.idle), cmp.Compare(a.work, b.work))
	})
	o := j.Options[opt]
	etcA := j.P.Rem * o.Excl.Seconds()
	for _, k := range keys {
		var idle, busy []int
		for g := k.n * sh.GPUsPerNode; g < (k.n+1)*sh.GPUsPerNode; g++ {
			if cl.Count(g) >= sh.MaxShare || cl.FreeMem(g) < o.Mem {
				continue
			}
			if cl.Count(g) == 0 {
				idle = append(idle, g)
			} else {
				busy = append(busy, g)
			}
		}
		if len(idle) >= need {
			return idle[:need], nil, 0, nil
		}
		if len(idle)+len(busy) < need {
			continue
		}
		type cand struct {
			g    int
			tCon float64
			ids  []trace.JobID
		}
		var cs []cand
		for _, g := range busy {
			c := cand{g: g, ids: slices.Clone(cl.Jobs(g))}
			ok := true
			for _, id := range c.ids {
				r, err := p.resident(id)
				if err != nil {
					return nil, nil, 0, err
				}
				xiA, okA := p.s.Env.Xi(j, opt, r.job, r.opt)
				xiB, okB := p.s.Env.Xi(r.job, r.opt, j, opt)
				if !okA || !okB {
					ok = false
					break
				}
				if check {
					share, tCon, _ := ShareCheck(etcA, r.etc, xiA, xiB)
					ok = ok && share
					c.tCon = max(c.tCon, tCon)
				}
			}
			if ok {
				cs = append(cs, c)
			}
		}
		if len(idle)+len(cs) < need {
			continue
		}
		slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(a.tCon, b.tCon) })
		gpus = idle
		for _, c := range cs[:need-len(idle)] {
			gpus = append(gpus, c.g)
			partners = appendNew(partners, c.ids...)
			score = max(score, c.tCon)
		}
		return gpus, partners, score, nil
	}
	return nil, nil, 0, nil
}

// yarn is the authors' exclusive placement for the non-sharing baselines (SPEC.md §5.9): a job of
// up to one node's GPUs goes to the first node (by ID) with enough idle GPUs; a larger job takes
// whole idle nodes plus one node for the remainder.
func (p *placer) yarn(j *Job) []int {
	cl := p.s.Cluster
	sh := cl.Shape()
	need, per := j.GPUs, sh.GPUsPerNode
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
		for n := range sh.Nodes {
			if cl.NodeIdle(n) >= need {
				return take(n, need, nil)
			}
		}
		return nil
	}
	whole, rest := need/per, need%per
	var gpus []int
	used := make([]bool, sh.Nodes)
	for n := 0; n < sh.Nodes && whole > 0; n++ {
		if cl.NodeIdle(n) == per {
			gpus = take(n, per, gpus)
			used[n] = true
			whole--
		}
	}
	if whole > 0 {
		return nil
	}
	if rest > 0 {
		for n := range sh.Nodes {
			if !used[n] && cl.NodeIdle(n) >= rest {
				return take(n, rest, gpus)
			}
		}
		return nil
	}
	return gpus
}

func appendNew(dst []trace.JobID, ids ...trace.JobID) []trace.JobID {
	for _, id := range ids {
		if !slices.Contains(dst, id) {
			dst = append(dst, id)
		}
	}
	return dst
}
