"""Shortest remaining time first, as sharebench's built-in `sjf`, in Python.

    sharebench simulate ... --policy "external:python3 clients/python/examples/sjf.py"

makes the same decisions as `--policy sjf` (a test checks decisions.jsonl and jobs.csv byte
for byte). The rules follow policy/sjf.go, policy/greedy.go and policy/place.go:

  * pending jobs in order of remaining exclusive time at their fastest option, then submit
    time, then ID; running jobs ranked by remaining time at their current, possibly slowed,
    iteration time;
  * each pending job in turn goes to idle GPUs by the YARN rule: a job of up to one node goes
    to the first node with enough idle GPUs, a larger one takes whole idle nodes plus one node
    for the rest, always the lowest-numbered GPUs;
  * a job that does not fit preempts running jobs ranked below it, lowest first, retrying
    after each, and skipping jobs with 100 iterations or fewer left; the victims stay
    preempted even if it never fits (the authors' rule); a victim is tried again when the walk
    reaches its rank, and placing it back on its own GPUs cancels its preemption.
"""

import bisect
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sharebench import Plan, Policy, seconds, serve  # noqa: E402

MIN_VICTIM_ITERS = 100


def yarn(cl, need):
    """The YARN placement on idle GPUs, or None."""
    per = cl.gpus_per_node
    if cl.idle < need:
        return None

    def take(n, k, gpus):
        for g in range(n * per, (n + 1) * per):
            if k == 0:
                break
            if not cl.jobs[g]:
                gpus.append(g)
                k -= 1
        return gpus

    if need <= per:
        for n in range(cl.nodes):
            if cl.node_idle[n] >= need:
                return take(n, need, [])
        return None
    whole, rest = divmod(need, per)
    gpus, used = [], set()
    for n in range(cl.nodes):
        if whole == 0:
            break
        if cl.node_idle[n] == per:
            take(n, per, gpus)
            used.add(n)
            whole -= 1
    if whole > 0:
        return None
    if rest > 0:
        for n in range(cl.nodes):
            if n not in used and cl.node_idle[n] >= rest:
                return take(n, rest, gpus)
        return None
    return gpus


class SJF(Policy):
    name = "sjf.py"

    def __init__(self, preempt=True):
        self.preempt = preempt
        self.queues = {}  # GPU count -> sorted [(key, job id)]

    def hello(self, hello):
        self.explain = hello.explain

    @staticmethod
    def pending_key(j):
        # remKey: remaining iterations × exclusive step time of the fastest option, in seconds.
        return (j.rem * seconds(j.options[j.fast].excl), 0, j.submit, j.id)

    @staticmethod
    def running_key(j, now):
        return (seconds(j.rem_time(now)), 0, j.submit, j.id)

    def schedule(self, st):
        for j in st.entered:
            bisect.insort(self.queues.setdefault(j.gpus, []), (self.pending_key(j), j.id))
        now, cl, jobs = st.now, st.cluster, st.jobs
        plan = Plan()
        reason = "exclusive (yarn)" if self.explain else ""
        # Running jobs, lowest priority first: the order victims are taken in.
        cands = sorted(((self.running_key(j, now), j) for j in st.running), key=lambda c: c[0], reverse=True)
        ci = 0
        ahead = []  # victims of this call not yet walked again: [key, job, cancelled]
        victims = []
        started = []

        def place(j, v):
            gpus = yarn(cl, j.gpus)
            if gpus is None:
                return False
            cl.place(j.id, gpus, j.options[j.fast].mem, j.fast)
            if v is not None and j.fast == j.opt and sorted(gpus) == sorted(j.on):
                v[2] = True  # back where it was: the preemption is cancelled
                return True
            plan.start_job(j, gpus, opt=j.fast, reason=reason)
            if v is None:
                started.append(j)  # leaves the pending queue
            return True

        def attempt(j, jk, v):
            nonlocal ci
            ok = j.gpus <= cl.idle and place(j, v)
            if ok or not self.preempt:
                return ok
            taken = []
            while not ok and ci < len(cands):
                rk, r = cands[ci]
                if rk <= jk:
                    break
                ci += 1
                if r.rem_iters(now) <= MIN_VICTIM_ITERS:
                    continue  # too close to its end: stays running
                cl.release(r.id)
                taken.append((rk, r))
                if j.gpus <= cl.idle:
                    ok = place(j, v)
            for rk, r in taken:
                nv = [rk, r, False]
                victims.append(nv)
                plan.stop_job(r)
                keys = [a[0] for a in ahead]
                ahead.insert(bisect.bisect_left(keys, rk), nv)
            return ok

        sizes = sorted(self.queues)
        pos = {s: 0 for s in sizes}
        phase1 = self.preempt
        dead = None  # smallest GPU count that failed to fit since the last release
        while True:
            # The next pending job in key order: the best head of the per-size queues,
            # restricted once no preemption can happen to sizes that may still fit.
            limit = None
            if not phase1:
                limit = cl.idle if dead is None else min(cl.idle, dead - 1)
            best, bs = None, None
            for s in sizes:
                if limit is not None and s > limit:
                    break
                q = self.queues[s]
                if pos[s] < len(q) and (best is None or q[pos[s]][0] < best[0]):
                    best, bs = q[pos[s]], s
            if ahead and (best is None or ahead[0][0] < best[0]):
                v = ahead.pop(0)
                if phase1:
                    attempt(v[1], v[0], v)
                elif v[1].gpus <= cl.idle and not place(v[1], v):
                    dead = v[1].gpus if dead is None else min(dead, v[1].gpus)
                continue
            if best is None:
                break
            key, jid = best
            j = jobs[jid]
            if phase1 and (ci >= len(cands) or cands[ci][0] <= key):
                # Nothing left ranks below this job or any later one: from here on only
                # placements on idle GPUs, which fail for every size at least one that failed.
                phase1 = False
                continue
            pos[bs] += 1
            if phase1:
                attempt(j, key, None)
            elif not place(j, None):
                dead = j.gpus if dead is None else min(dead, j.gpus)
        cancelled = {v[1].id for v in victims if v[2]}
        if cancelled:
            plan.stop = [i for i in plan.stop if i not in cancelled]
        for j in started:
            q = self.queues[j.gpus]
            k = bisect.bisect_left(q, (self.pending_key(j), j.id))
            del q[k]
        return plan


if __name__ == "__main__":
    serve(SJF(preempt="--no-preempt" not in sys.argv[1:]))
