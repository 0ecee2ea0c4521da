package sim

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/policy"
	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/trace"
)

// advance moves the clock to t, accounting occupancy over the elapsed interval.
func (e *engine) advance(t time.Duration) {
	if t < e.now {
		panic(fmt.Sprintf("sim: time went backwards from %v to %v", e.now, t))
	}
	e.util.add(e.now, t, e.cl.NumGPUs()-e.cl.Idle(), e.cl.Shared(), len(e.run), e.pend.Len())
	e.now = t
}

// arrive makes job i pending.
func (e *engine) arrive(i int32) {
	j := e.jobs[i]
	j.Since = e.now
	e.emit(Event{T: e.now, Kind: Submit, Job: j.ID})
	e.enqueue(i)
}

// enqueue inserts job i into the pending queues at its place in the policy's order.
func (e *engine) enqueue(i int32) {
	j := e.jobs[i]
	e.rekeyOnly(j)
	e.pend.Insert(j)
	e.fam[j.Family].Insert(j)
}

// rekeyOnly sets the key job j enters the pending queues with; apply calls it alone for a job
// that moves, which never enters them.
func (e *engine) rekeyOnly(j *policy.Job) {
	if e.keyer != nil {
		j.K = e.keyer.Key(j)
	}
}

// markMoves marks the running jobs among starts: the plan stops them, or apply fails.
func (e *engine) markMoves(starts []policy.Placement) {
	for _, pl := range starts {
		if j := e.lookup(pl.Job); j != nil && j.Running && !e.moving[j.Idx] {
			e.moving[j.Idx] = true
			e.movers = append(e.movers, j.Idx)
		}
	}
}

// clearMoves clears the marks markMoves left. A plan that apply rejected may leave a marked job
// stopped and not started again: it goes to the pending queues and loses its completion, as a
// stop without a start does, so that the engine stays whole after the error.
func (e *engine) clearMoves() {
	for _, i := range e.movers {
		if e.moving[i] && !e.jobs[i].Running {
			e.q.retire(i)
			e.enqueue(i)
		}
		e.moving[i] = false
	}
	e.movers = e.movers[:0]
}

// dequeue removes pending job j (with its key unchanged since enqueue).
func (e *engine) dequeue(j *policy.Job) {
	if !e.pend.Delete(j) || !e.fam[j.Family].Delete(j) {
		panic(fmt.Sprintf("sim: job %d missing from the pending queue", j.ID))
	}
}

// rekey moves a pending job whose key changed to its new place.
func (e *engine) rekey(id trace.JobID) error {
	j := e.lookup(id)
	if j == nil || j.Running || j.Done {
		return fmt.Errorf("rekey of job %d, which is not pending", id)
	}
	e.dequeue(j)
	e.enqueue(j.Idx)
	return nil
}

// settle brings job i's lazily tracked progress up to now.
func (e *engine) settle(i int32) {
	j := e.jobs[i]
	p := &j.P
	dt := e.now - p.At
	if dt <= 0 {
		return
	}
	if e.stats[i].sharedNow {
		e.stats[i].sharedFor += dt
	}
	p.Advance(e.now)
}

// partners returns the distinct jobs sharing a GPU with j.
func (e *engine) partners(j *policy.Job, buf []*policy.Job) []*policy.Job {
	buf = buf[:0]
	if e.cl.Shared() == 0 {
		return buf // no GPU holds two jobs
	}
	for _, g := range j.On {
		for _, id := range e.cl.Jobs(g) {
			if id != j.ID {
				q := e.lookup(id)
				// Jobs not running yet are the plan's later starts on a cluster that holds
				// the plan already (reflects): not partners yet.
				if q.Running && !slices.Contains(buf, q) {
					buf = append(buf, q)
				}
			}
		}
	}
	return buf
}

// rerate recomputes the slowdown and rate of running job i (already settled) and reschedules its
// completion.
func (e *engine) rerate(i int32, buf []*policy.Job) []*policy.Job {
	j := e.jobs[i]
	buf = e.partners(j, buf)
	xi := 1.0
	switch {
	case len(buf) == 0:
	case e.pacer != nil:
		xi = max(xi, e.pacer.Slowdown(j, buf))
	default:
		for _, q := range buf {
			x, ok := e.env.Xi(j, j.Opt, q, q.Opt)
			if !ok {
				panic(fmt.Sprintf("sim: job %d shares with job %d but the profile lacks the pair", j.ID, q.ID))
			}
			xi = max(xi, x)
		}
	}
	st := &e.stats[i]
	st.sharedNow = len(buf) > 0
	if st.sharedNow && !st.everShared {
		st.everShared = true
		e.shared++
	}
	j.Xi = xi
	if st.ratedAt != e.now {
		st.ratedAt, st.prevRate, st.prevLoss = e.now, j.P.Rate, st.eventLoss
	}
	if e.groupLoss {
		st.eventLoss = groupLoss(j, buf)
	}
	j.P.Rate = 1 / (j.Options[j.Opt].Excl.Seconds() * xi)
	e.ver[i]++
	if !e.listed[i] {
		e.listed[i] = true
		e.rerated = append(e.rerated, j)
	}
	// A run left of less than the horizon ends before 2·Horizon + MaxRestart, which int64 holds;
	// a longer one ends past the horizon anyway and saturates at Never.
	at := simtime.Never
	if ns := j.P.Rem / j.P.Rate * 1e9; ns < float64(Horizon) {
		at = e.now + j.P.Overhead + time.Duration(math.Round(ns))
	}
	e.q.predict(i, at, e.ver[i])
	return buf
}

// touch settles job i and its partners before a change of co-location; it returns them.
func (e *engine) touch(i int32, buf []*policy.Job) []*policy.Job {
	e.settle(i)
	buf = e.partners(e.jobs[i], buf)
	for _, q := range buf {
		e.settle(q.Idx)
	}
	return buf
}

// finish completes running job i.
func (e *engine) finish(i int32) {
	j := e.jobs[i]
	ps := e.touch(i, e.touched[:0])
	e.touched = ps
	if rem := j.P.Rem; rem > 1e-6*math.Max(1, float64(j.Iters)) {
		panic(fmt.Sprintf("sim: job %d finished with %g iterations left", j.ID, rem))
	}
	j.P.Rem = 0
	j.Done = true
	e.finished = append(e.finished, j.ID)
	if err := e.cl.Release(j.ID); err != nil {
		panic(fmt.Sprintf("sim: finishing job %d: %v", j.ID, err))
	}
	e.stopRunning(j, false)
	st := &e.stats[i]
	st.end = e.now
	jct := e.now - j.Submit
	if !e.live && jct+time.Millisecond < st.solo { // a real job may beat the profile
		panic(fmt.Sprintf("sim: job %d finished in %v, faster than its solo time %v", j.ID, jct, st.solo))
	}
	e.done++
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.done, len(e.jobs))
	}
	e.emit(Event{T: e.now, Kind: Finish, Job: j.ID, JCT: jct})
	buf := e.partnered[:0]
	for _, q := range ps {
		buf = e.rerate(q.Idx, buf)
	}
	e.partnered = buf
}

func (e *engine) stopRunning(j *policy.Job, moves bool) {
	j.Running = false
	if !moves {
		e.q.retire(j.Idx)
	}
	j.Since, j.LastRun = e.now, e.now
	k := e.runAt[j.Idx]
	if k < 0 {
		panic(fmt.Sprintf("sim: job %d not in the running list", j.ID))
	}
	n := len(e.run) - 1
	e.run[k], e.runIdx[k] = e.run[n], e.runIdx[n]
	e.runAt[e.runIdx[k]] = k
	e.run[n] = nil
	e.run, e.runIdx = e.run[:n], e.runIdx[:n]
	e.runAt[j.Idx] = -1
	e.runSorted = false
	e.stats[j.Idx].sharedNow = false
}

// schedule asks the policy for a plan and applies it.
func (e *engine) schedule() error {
	e.nSched++
	for again := true; again; {
		if e.cancelled() {
			return context.Canceled // the loop reports the context's error
		}
		st := &e.state
		st.Now = e.now
		st.Finished = e.finished
		st.Rerated = e.rerated
		st.Resync = e.live
		mark, shared := e.cl.Mark(), e.cl.Shared()
		plan, err := e.pol.Schedule(st)
		// The policy placed and released jobs tentatively; when that is exactly the plan, the
		// cluster keeps it and apply does not redo it (see reflects).
		placed := err == nil && e.reflects(mark, shared, plan)
		if placed {
			e.cl.Commit(mark)
			e.kept++
		} else {
			e.cl.Rollback(mark)
		}
		e.finished = e.finished[:0]
		for _, j := range e.rerated {
			e.listed[j.Idx] = false
		}
		e.rerated = e.rerated[:0]
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		// A plan that changes keys is followed at once by another call on the re-sorted queue.
		again = len(plan.Rekey) > 0
		for _, id := range plan.Rekey {
			if err := e.rekey(id); err != nil {
				return fmt.Errorf("sim: policy %s: %w", e.pol.Name(), err)
			}
		}
		if again {
			plan.Wake = 0
		}
		if err := e.apply(plan, placed); err != nil {
			return err
		}
	}
	return nil
}

// reflects reports whether the cluster's changes since mark are exactly the plan's: its stops
// released (and placed again only if the plan starts them again), its starts placed as they
// say, and any other job placed as it was. Apply's stops and starts in order would reach the
// same cluster through valid steps (stops only free room; each start takes a part of what the
// final cluster holds), so apply need only do the rest, reading the cluster as it was at each
// step: before a start, its GPUs held the running jobs among those there now (place). A stop's
// partners are not read back so; a plan with stops is kept only where no GPU was shared at the
// mark (shared) or is now, so that no stopped job had any.
func (e *engine) reflects(mark, shared int, plan policy.Plan) bool {
	if e.cfg.redo || e.cl.Depth() != 1 || len(plan.Stop) > 0 && (shared > 0 || e.cl.Shared() > 0) {
		return false
	}
	if e.stamp++; e.stamp == 0 {
		clear(e.seen)
		e.stamp = 1
	}
	for _, pl := range plan.Start {
		j := e.lookup(pl.Job)
		if j == nil || pl.Opt < 0 || pl.Opt >= len(j.Options) {
			return false
		}
		if o := j.Options[pl.Opt]; !e.cl.PlacedAs(pl.Job, pl.GPUs, o.Mem, o.Tag) {
			return false
		}
		e.seen[j.Idx] = e.stamp
	}
	for _, id := range plan.Stop {
		j := e.lookup(id)
		if j == nil {
			return false
		}
		if e.seen[j.Idx] != e.stamp { // not started again
			if _, _, on := e.cl.Placed(id); on {
				return false
			}
			e.seen[j.Idx] = e.stamp
		}
	}
	ok := true
	e.cl.EachChange(mark, func(id trace.JobID, unchanged bool) {
		switch j := e.lookup(id); {
		case j == nil:
			ok = false
		case e.seen[j.Idx] != e.stamp: // the first change of a job outside the plan
			e.seen[j.Idx] = e.stamp
			ok = ok && unchanged
		}
	})
	return ok
}

// apply validates and carries out a plan: stops first, then starts. With placed, the cluster
// already holds the plan (reflects).
func (e *engine) apply(plan policy.Plan, placed bool) error {
	name := e.pol.Name()
	for _, n := range plan.Notes {
		e.emit(Event{T: e.now, Kind: Kind(n.Event), Job: n.Job, Reason: n.Reason})
	}
	buf := e.partnered[:0]
	moves := len(plan.Stop) > 0 && len(plan.Start) > 0 && !e.cfg.queueMoves
	if moves {
		e.markMoves(plan.Start)
	}
	// One defer: with a second, the compiler no longer open-codes them in a function of this
	// many returns, and every call would pay the runtime's defer records.
	defer func() {
		e.partnered = buf
		if moves {
			e.clearMoves()
		}
	}()
	for _, id := range plan.Stop {
		jj := e.lookup(id)
		if jj == nil || !jj.Running {
			return fmt.Errorf("sim: policy %s: job %d: stop of a job that is not running", name, id)
		}
		j, i := jj, jj.Idx
		// A job the plan starts again (a victim that moves) would leave the pending queues and
		// its completion the event queue only to come back at its start: it keeps its
		// completion, if any, which the start predicts again in place, and skips the queues.
		// The queues, their order and the events' order are the same.
		moved := e.moving[i]
		var ps []*policy.Job // partners: none when placed (no GPU was shared)
		if placed {
			e.settle(i)
		} else {
			ps = e.touch(i, e.touched[:0])
			e.touched = ps
			if err := e.cl.Release(id); err != nil {
				return fmt.Errorf("sim: policy %s: job %d: %w", name, id, err)
			}
		}
		e.stopRunning(j, moved)
		j.Preempts++
		j.P.Overhead = 0
		e.emit(Event{T: e.now, Kind: Preempt, Job: id})
		if moved {
			e.moves++
			e.rekeyOnly(j)
		} else {
			e.enqueue(i)
		}
		for _, q := range ps {
			buf = e.rerate(q.Idx, buf)
		}
	}
	for k, pl := range plan.Start {
		for _, id := range pl.Partners {
			restarted := slices.ContainsFunc(plan.Start[:k], func(p policy.Placement) bool { return p.Job == id })
			if slices.Contains(plan.Stop, id) && !restarted {
				return fmt.Errorf("sim: policy %s: job %d: illegal plan: starts sharing with job %d, which the same plan preempts", name, pl.Job, id)
			}
		}
		jp := e.lookup(pl.Job)
		if jp == nil {
			return fmt.Errorf("sim: policy %s: start of unknown job %d", name, pl.Job)
		}
		j, i := jp, jp.Idx
		if j.Running || j.Submit > e.now || e.stats[i].end >= 0 {
			return fmt.Errorf("sim: policy %s: job %d: start of a job that is not pending", name, pl.Job)
		}
		if pl.Opt < 0 || pl.Opt >= len(j.Options) {
			return fmt.Errorf("sim: policy %s: job %d: option %d out of range", name, pl.Job, pl.Opt)
		}
		if len(pl.GPUs) != j.GPUs {
			return fmt.Errorf("sim: policy %s: job %d: placed on %d GPUs, needs %d", name, pl.Job, len(pl.GPUs), j.GPUs)
		}
		if err := e.place(j, pl, placed); err != nil {
			return fmt.Errorf("sim: policy %s: %w", name, err)
		}
		if e.moving[i] {
			e.moving[i] = false // stopped above and never queued
		} else {
			e.dequeue(j)
		}
		e.startRunning(i, pl)
		buf = e.rerate(i, buf)
		e.again = append(e.again[:0], buf...)
		for _, q := range e.again {
			buf = e.rerate(q.Idx, buf)
		}
	}
	// Each plan states the policy's next wake-up; one without cancels an earlier request.
	switch {
	case e.cfg.Interval > 0:
	case plan.Wake > e.now && plan.Wake != e.wake:
		e.wake = plan.Wake
		e.q.push(event{t: plan.Wake, kind: evWake})
	case plan.Wake <= e.now:
		e.wake = 0
	}
	return nil
}

// place validates the placement of start pl on the cluster and carries it out, after settling
// the jobs that will share with it. With placed, the cluster holds it already, and the plan's
// later starts too: the jobs not running yet, which it sets aside.
func (e *engine) place(j *policy.Job, pl policy.Placement, placed bool) error {
	if !placed {
		if err := e.cl.CanPlace(j.ID, pl.GPUs, j.Options[pl.Opt].Mem); err != nil {
			return fmt.Errorf("illegal plan: %w", err)
		}
	}
	// j itself is among the residents when the policy placed it (placed), but not running yet.
	for _, g := range pl.GPUs {
		for _, id := range e.cl.Jobs(g) {
			if id == j.ID {
				continue
			}
			q := e.lookup(id)
			if !q.Running || e.pacer != nil {
				continue
			}
			_, ok1 := e.env.Xi(j, pl.Opt, q, q.Opt)
			_, ok2 := e.env.Xi(q, q.Opt, j, pl.Opt)
			if !ok1 || !ok2 {
				return fmt.Errorf("job %d: illegal plan: shares GPU %s with job %d, a pair the profile lacks", pl.Job, e.cl.ID(g), id)
			}
		}
	}
	if pl.Opt > 0 && !e.stats[j.Idx].subShared && e.needsSmallerSub(j, pl.GPUs) {
		e.stats[j.Idx].subShared = true
		e.subShared++
	}
	// Settle the future partners before their rates change.
	for _, g := range pl.GPUs {
		for _, id := range e.cl.Jobs(g) {
			if id == j.ID {
				continue
			}
			if q := e.lookup(id); q.Running {
				e.settle(q.Idx)
			}
		}
	}
	if placed {
		return nil
	}
	if err := e.cl.PlaceTagged(j.ID, pl.GPUs, j.Options[pl.Opt].Mem, j.Options[pl.Opt].Tag); err != nil {
		return fmt.Errorf("illegal plan: %w", err)
	}
	return nil
}

func (e *engine) startRunning(i int32, pl policy.Placement) {
	j := e.jobs[i]
	j.Running = true
	// The previous run's list is no longer read by anyone: its memory is reused.
	j.On = append(j.On[:0], pl.GPUs...)
	if !slices.IsSorted(j.On) {
		slices.Sort(j.On)
	}
	j.Opt = pl.Opt
	j.Since = e.now
	j.P.At = e.now
	if j.Started && e.stats[i].restart > 0 {
		j.P.Overhead = e.stats[i].restart
		e.restartTotal += e.stats[i].restart
	}
	e.stats[i].lastRem = j.P.Rem
	if !j.Started {
		j.Started = true
		e.stats[i].start = e.now
	}
	if e.runAt[i] >= 0 {
		panic(fmt.Sprintf("sim: job %d started twice", j.ID))
	}
	e.runAt[i] = int32(len(e.run))
	e.run, e.runIdx = append(e.run, j), append(e.runIdx, i)
	e.runSorted = false
	if e.obs != nil {
		e.emit(Event{T: e.now, Kind: Start, Job: j.ID, GPUs: e.gpuNames(j.On), SubBatch: j.Options[pl.Opt].SubBatch, Partners: pl.Partners, Reason: pl.Reason})
	}
}

// eventLosses applies the Muri simulator's per-event overhead (Config.OverheadEveryEvent): every
// running job loses min(Δ, its overhead) of the progress it made since the previous event, at
// its current speed, and its completion is predicted again.
func (e *engine) eventLosses() {
	buf := e.partnered[:0]
	defer func() { e.partnered = buf }()
	for _, j := range e.running() {
		i := j.Idx
		e.settle(i)
		st := &e.stats[i]
		// The loss goes at the rate, and with the group, the job ran at since the previous event,
		// as the lineage reckons it before it re-rates jobs: a partner that finished now has
		// re-rated it.
		rate, lost := j.P.Rate, st.eventLoss
		if st.ratedAt == e.now {
			rate, lost = st.prevRate, st.prevLoss
		}
		if loss := min(st.lastRem-j.P.Rem, lost.Seconds()*rate); loss > 0 {
			j.P.Rem += loss
		}
		st.lastRem = j.P.Rem
		buf = e.rerate(i, buf)
	}
}

// groupLoss is what job j loses at every event next to partners under a policy.GroupOverhead:
// the lineage's start overhead of every job of the group on j's GPU count.
func groupLoss(j *policy.Job, partners []*policy.Job) time.Duration {
	d, _ := profile.LineageRestart(j.Model, j.GPUs)
	for _, q := range partners {
		dq, _ := profile.LineageRestart(q.Model, j.GPUs)
		d += dq
	}
	return d
}

// needsSmallerSub reports whether job j's largest sub-batch would not fit next to the jobs
// already on one of gpus: it shares there only thanks to a smaller sub-batch.
func (e *engine) needsSmallerSub(j *policy.Job, gpus []int) bool {
	for _, g := range gpus {
		// Only running jobs were there before j: a cluster that holds the plan already
		// (reflects) holds j and the plan's later starts too.
		n, free := 0, e.cl.FreeMem(g)
		for _, id := range e.cl.Jobs(g) {
			if e.lookup(id).Running {
				n++
			} else {
				_, mem, _ := e.cl.Placed(id)
				free += mem
			}
		}
		if n > 0 && free < j.Options[0].Mem {
			return true
		}
	}
	return false
}

// running returns the running jobs by ID (State.Running), sorting them again only after a
// start or stop.
func (e *engine) running() []*policy.Job {
	if !e.runSorted {
		e.runByID = append(e.runByID[:0], e.run...)
		slices.SortFunc(e.runByID, func(a, b *policy.Job) int { return cmp.Compare(a.ID, b.ID) })
		e.runSorted = true
	}
	return e.runByID
}
