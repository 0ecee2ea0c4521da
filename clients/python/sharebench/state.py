"""The State a policy sees, kept up to date from the protocol's deltas, and the Plan it returns.

Session.apply(message) turns each "state" message (jobs that arrived, jobs whose simulation
fields changed, jobs that finished) into a full State: every job known by ID, the pending jobs
in (submit, id) order, the running jobs by ID and the cluster's occupancy. Field names and
meanings follow policy.Job and policy.State of the Go simulator; times are nanoseconds.
"""

import bisect

from .goarith import duration, seconds


class Option:
    """One way to run a job: its sub-batch, exclusive step time (ns) on the job's GPU count,
    memory per GPU (bytes) and profile configuration index."""

    __slots__ = ("sub_batch", "excl", "mem", "cfg")

    def __init__(self, sub_batch, excl, mem, cfg):
        self.sub_batch, self.excl, self.mem, self.cfg = sub_batch, excl, mem, cfg

    def __repr__(self):
        return "Option(sub_batch=%d, excl=%d, mem=%d, cfg=%d)" % (self.sub_batch, self.excl, self.mem, self.cfg)


class Job:
    """A trace job and its simulation state, as policy.Job."""

    __slots__ = (
        # fixed
        "id", "submit", "gpus", "iters", "model", "batch", "options", "fast", "gc", "family",
        # owned by the engine
        "running", "on", "opt", "xi", "started", "preempts", "since", "last_run",
        "rem", "at", "rate", "overhead", "exec",
    )

    def update(self, m):
        self.running = m["running"]
        self.on = m["on"]
        self.opt = m["opt"]
        self.xi = m["xi"]
        self.started = m["started"]
        self.preempts = m["preempts"]
        self.since = m["since"]
        self.last_run = m["last_run"]
        self.rem = m["rem"]
        self.at = m["at"]
        self.rate = m["rate"]
        self.overhead = m["overhead"]
        self.exec = m["exec"]

    @classmethod
    def from_message(cls, m):
        j = cls()
        j.id = m["id"]
        j.submit = m["submit"]
        j.gpus = m["gpus"]
        j.iters = m["iters"]
        j.model = m["model"]
        j.batch = m["batch"]
        j.options = [Option(o["sub_batch"], o["excl"], o["mem"], o["cfg"]) for o in m["options"]]
        j.fast = m["fast"]
        j.gc = m["gc"]
        j.family = m["family"]
        j.update(m)
        return j

    def rem_iters(self, now):
        """Iterations left at now (Job.RemIters)."""
        if not self.running:
            return self.rem
        dt = now - self.at - self.overhead
        if dt <= 0:
            return self.rem
        return max(0.0, self.rem - seconds(dt) * self.rate)

    def rem_time(self, now):
        """Remaining time in ns at the current iteration time (Job.RemTime): slowed while
        running, at the fastest option while pending."""
        if self.running:
            return duration(self.rem_iters(now) * float(self.options[self.opt].excl) * self.xi / 1e9)
        return duration(self.rem * float(self.options[self.fast].excl) / 1e9)

    def executed(self, now):
        """Wall time run so far in ns (Job.Executed)."""
        if not self.running:
            return self.exec
        return self.exec + now - self.at

    def iter_time(self):
        """Current time per iteration in ns (Job.IterTime)."""
        if self.running:
            return int(float(self.options[self.opt].excl) * self.xi)
        return self.options[self.fast].excl

    def __repr__(self):
        return "Job(id=%d, gpus=%d, model=%s, running=%s)" % (self.id, self.gpus, self.model, self.running)


class Cluster:
    """GPU occupancy: jobs per GPU (sorted by ID), free memory per GPU, idle GPUs per node.

    GPUs are flat indices g = node * gpus_per_node + index. A policy may place and release
    jobs tentatively while it plans; the runner undoes that before the next state.
    """

    def __init__(self, nodes, gpus_per_node, gpu_mem, max_share):
        self.nodes, self.gpus_per_node, self.gpu_mem, self.max_share = nodes, gpus_per_node, gpu_mem, max_share
        n = nodes * gpus_per_node
        self.jobs = [[] for _ in range(n)]
        self.free = [gpu_mem] * n
        self.node_idle = [gpus_per_node] * nodes
        self.idle = n
        self.placed = {}  # job ID -> (gpus, mem)
        self._undo = None

    @property
    def num_gpus(self):
        return len(self.free)

    def gpu_id(self, g):
        """The "node-index" name of GPU g, as in the decision log."""
        return "%d-%d" % divmod(g, self.gpus_per_node)

    def node(self, g):
        return g // self.gpus_per_node

    def count(self, g):
        return len(self.jobs[g])

    def can_place(self, gpus, mem):
        return all(len(self.jobs[g]) < self.max_share and self.free[g] >= mem for g in gpus) and len(set(gpus)) == len(gpus)

    def place(self, job_id, gpus, mem, opt=0):
        """Put job_id on gpus with mem bytes on each, running at option opt."""
        if job_id in self.placed:
            raise ValueError("job %d is already placed" % job_id)
        for g in gpus:
            js = self.jobs[g]
            if not js:
                self.idle -= 1
                self.node_idle[g // self.gpus_per_node] -= 1
            bisect.insort(js, job_id)
            self.free[g] -= mem
        self.placed[job_id] = (list(gpus), mem, opt)
        if self._undo is not None:
            self._undo.append((True, job_id))

    def release(self, job_id):
        gpus, mem, opt = self.placed.pop(job_id)
        for g in gpus:
            js = self.jobs[g]
            js.remove(job_id)
            self.free[g] += mem
            if not js:
                self.idle += 1
                self.node_idle[g // self.gpus_per_node] += 1
        if self._undo is not None:
            self._undo.append((False, job_id, gpus, mem, opt))

    def opt(self, job_id):
        """The option job_id is placed at: its running option, or the one planned this call."""
        return self.placed[job_id][2]

    def mark(self):
        self._undo = []

    def rollback(self):
        undo, self._undo = self._undo, None
        for u in reversed(undo or ()):
            if u[0]:
                self.release(u[1])
            else:
                self.place(u[1], u[2], u[3], u[4])


class Hello:
    """The run's fixed facts from the hello: cluster shape, sharing mode, whether the decision
    log is written (explain: fill Start reasons), and the profile's slowdowns."""

    def __init__(self, m):
        self.protocol = m["protocol"]
        c = m["cluster"]
        self.nodes, self.gpus_per_node = c["nodes"], c["gpus_per_node"]
        self.gpu_mem, self.max_share = c["gpu_mem"], c["max_share"]
        self.mode = m["mode"]
        self.explain = m["explain"]
        self.configs = m["configs"]
        self._xi = m["xi"]  # [gpu-count class][cfg a][cfg b], None where the profile lacks it

    def raw_xi(self, gc, a, b):
        """ξ of configuration a next to b for GPU-count class gc as the profile gives it."""
        return self._xi[gc][a][b]

    def xi(self, a, opt_a, b, opt_b):
        """Slowdown of job a (at option opt_a) next to job b (at opt_b), clamped to >= 1, or
        None when the profile lacks either direction (Env.Xi): such jobs may not share."""
        ca, cb = a.options[opt_a].cfg, b.options[opt_b].cfg
        x = self._xi[a.gc][ca][cb]
        y = self._xi[b.gc][cb][ca]
        if x is None or y is None:
            return None
        return max(1.0, x)


class State:
    """What a policy sees at a scheduling instant (policy.State).

    now: the instant (ns); seq: its number; jobs: every unfinished job seen, by ID; pending:
    pending jobs in (submit, id) order; running: running jobs by ID; arrived: jobs submitted
    since the previous instant; entered: jobs that became pending since then (arrivals and
    preempted jobs); finished: (id, end ns) of jobs that finished since then; cluster: the
    occupancy; hello: the run's fixed facts.
    """

    __slots__ = ("now", "seq", "jobs", "pending", "running", "arrived", "entered", "finished", "cluster", "hello")

    @property
    def now_s(self):
        return seconds(self.now)

    def lookup(self, job_id):
        return self.jobs.get(job_id)


class Plan:
    """A policy's decision: jobs to stop (applied first), jobs to start, an optional wake-up
    time (ns) and notes for the decision log."""

    __slots__ = ("stop", "start", "wake", "notes")

    def __init__(self):
        self.stop, self.start, self.wake, self.notes = [], [], 0, []

    def stop_job(self, job):
        self.stop.append(job.id if isinstance(job, Job) else job)

    def start_job(self, job, gpus, opt=None, partners=(), reason=""):
        """Start job on the flat GPU indices gpus at option opt (default: the job's fastest);
        partners lists the running jobs it shares GPUs with, for the decision log."""
        s = {"job": job.id if isinstance(job, Job) else job, "gpus": list(gpus)}
        if opt is not None:
            s["opt"] = opt
        if partners:
            s["partners"] = list(partners)
        if reason:
            s["reason"] = reason
        self.start.append(s)

    def note(self, job, event, reason=""):
        n = {"job": job.id if isinstance(job, Job) else job, "event": event}
        if reason:
            n["reason"] = reason
        self.notes.append(n)

    def message(self, seq):
        m = {"type": "plan", "seq": seq}
        if self.stop:
            m["stop"] = self.stop
        if self.start:
            m["start"] = self.start
        if self.wake:
            m["wake"] = self.wake
        if self.notes:
            m["notes"] = self.notes
        return m


def _pkey(j):
    return (j.submit, j.id)


class Session:
    """The client's copy of the simulation, updated message by message."""

    def __init__(self, hello_message):
        self.hello = Hello(hello_message)
        h = self.hello
        self.cluster = Cluster(h.nodes, h.gpus_per_node, h.gpu_mem, h.max_share)
        self.jobs = {}
        self.pending = []  # (submit, id) order
        self._pkeys = []
        self.running = {}
        self.now = 0
        self.seq = 0
        # Job-seconds spent in the system (JCT accrued), in ns, up to self.now.
        self.accrued = 0

    def _enter(self, j):
        k = _pkey(j)
        i = bisect.bisect_left(self._pkeys, k)
        self._pkeys.insert(i, k)
        self.pending.insert(i, j)

    def _leave(self, j):
        i = bisect.bisect_left(self._pkeys, _pkey(j))
        del self._pkeys[i]
        del self.pending[i]

    def apply(self, m):
        """Apply a "state" message and return the State."""
        now = m["now"]
        in_system = len(self.pending) + len(self.running)
        accrued = in_system * (now - self.now) if self.seq else 0
        self.seq, self.now = m["seq"], now
        cl = self.cluster
        arrived, entered, finished = [], [], []
        for jm in m["arrived"]:
            j = Job.from_message(jm)
            self.jobs[j.id] = j
            arrived.append(j)
            accrued += now - j.submit
            if j.running:  # never, on arrival; kept general
                self.running[j.id] = j
                cl.place(j.id, j.on, j.options[j.opt].mem, j.opt)
            else:
                self._enter(j)
                entered.append(j)
        for um in m["updated"]:
            j = self.jobs[um["id"]]
            was = j.running
            if was:
                cl.release(j.id)
            j.update(um)
            if j.running:
                cl.place(j.id, j.on, j.options[j.opt].mem, j.opt)
                if not was:
                    self._leave(j)
                    self.running[j.id] = j
            elif was:
                del self.running[j.id]
                self._enter(j)
                entered.append(j)
        for job_id, end in m["finished"]:
            j = self.jobs.pop(job_id)
            if j.running:
                cl.release(job_id)
                del self.running[job_id]
            else:
                self._leave(j)
            accrued -= now - end
            finished.append((job_id, end))
        self.accrued += accrued
        s = State()
        s.now, s.seq, s.jobs, s.cluster, s.hello = now, self.seq, self.jobs, cl, self.hello
        s.pending = self.pending
        s.running = [self.running[k] for k in sorted(self.running)]
        s.arrived, s.entered, s.finished = arrived, entered, finished
        return s
