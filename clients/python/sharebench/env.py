"""An environment loop over sharebench, for policies that learn.

    env = Env(["--trace", "t.csv", "--cluster", "2x8", "--profile", "p.json"], out="runs/ep")
    state = env.reset()
    while True:
        state, reward, done, info = env.step(my_plan(state))
        if done:
            break

Each reset() starts `sharebench simulate` with the given arguments and the policy
external{"fds":[...]}: sharebench speaks the protocol on two pipes to this process, so the
engine, the profile and the plan checks are exactly those of any other run. The reward of a
step is minus the job-seconds spent in the system (JCT accrued) from the step's instant to the
next one; over an episode the rewards add up to minus the sum of all JCTs, in seconds.
"""

import json
import os
import subprocess
import tempfile

from .protocol import PROTOCOL, Channel, ProtocolError, check_hello
from .state import Session


class EpisodeError(RuntimeError):
    """sharebench ended the episode with an error."""


class Env:
    def __init__(self, args, out=None, sharebench=("sharebench",), name="env", timeout_s=0, cwd=None):
        """args: arguments of `sharebench simulate` other than --policy and --out; out: the
        run directory of each episode (None: a temporary one, removed); sharebench: the
        command that runs sharebench; timeout_s: how long sharebench waits for each plan
        (0: forever, so that training between steps never times out)."""
        self.args, self.out, self.cmd = list(args), out, list(sharebench)
        self.name, self.timeout_s, self.cwd = name, timeout_s, cwd
        self.proc = None
        self.session = None
        self.result = None

    def reset(self):
        """Start an episode and return its first State."""
        self.close()
        r_down, w_down = os.pipe()  # sharebench -> us
        r_up, w_up = os.pipe()  # us -> sharebench
        spec = json.dumps({"fds": [r_up, w_down], "timeout_s": self.timeout_s}, separators=(",", ":"))
        out = self.out
        self._tmp = None
        if out is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="sharebench-env-")
            out = os.path.join(self._tmp.name, "run")
        self._log = tempfile.TemporaryFile()
        argv = self.cmd + ["simulate"] + self.args + ["--policy", "external" + spec, "--out", out]
        self.proc = subprocess.Popen(argv, pass_fds=(r_up, w_down), stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, cwd=self.cwd)
        os.close(r_up)
        os.close(w_down)
        self.ch = Channel(os.fdopen(r_down, "rb"), os.fdopen(w_up, "wb"))
        m = self._read()
        check_hello(m)
        self.session = Session(m)
        self.ch.write({"type": "hello", "protocol": PROTOCOL, "name": self.name})
        self.state = self._state(self._read())
        self._taken = 0
        return self.state

    @property
    def hello(self):
        return self.session.hello

    def step(self, plan):
        """Apply plan at the current instant; return (next State or None, reward, done, info).
        info is {} during the episode and the end message (the run's totals) at its end."""
        self.session.cluster.rollback()  # undo what the policy tried while planning
        self.ch.write(plan.message(self.state.seq))
        m = self._read()
        if m.get("type") == "end":
            self._finish(m)
            total = m["sum_jct_s"]
            reward = -(total - self._taken)
            self._taken = total
            return None, reward, True, m
        before = self.session.accrued
        self.state = self._state(m)
        reward = -(self.session.accrued - before) / 1e9
        self._taken += -reward
        return self.state, reward, False, {}

    def _state(self, m):
        if m.get("type") != "state":
            raise ProtocolError("want a state, got %r" % m.get("type"))
        s = self.session.apply(m)
        self.session.cluster.mark()
        return s

    def _read(self):
        m = self.ch.read()
        if m is None:
            self._finish(None)
            raise EpisodeError("sharebench ended the exchange: " + self._output())
        if m.get("type") == "end" and "error" in m:
            self._finish(m)
            raise EpisodeError(m["error"])
        return m

    def _output(self):
        self._log.seek(0)
        return self._log.read().decode(errors="replace").strip()

    def _finish(self, m):
        self.result = m
        for f in (self.ch.w, self.ch.r):
            try:
                f.close()
            except OSError:
                pass
        rc = self.proc.wait()
        out = self._output()
        self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
        if rc != 0 and (m is None or "error" not in m):
            raise EpisodeError("sharebench exited with status %d: %s" % (rc, out))

    def close(self):
        """Stop a running episode."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
