"""The protocol runner: serve(policy) answers sharebench on standard input and output."""

import json
import sys

from .state import Session

PROTOCOL = 1


class ProtocolError(Exception):
    """The other side broke the protocol."""


class Policy:
    """Base class of external policies. Override schedule(); hello() and end() are optional.

    name is reported to sharebench in the hello reply (it appears in the run's notes).
    """

    name = None

    def hello(self, hello):
        """Called once with the run's fixed facts (a Hello) before the first state."""

    def schedule(self, state):
        """Return the Plan for this scheduling instant. state.cluster may be changed
        tentatively (place/release); the changes are undone afterwards."""
        raise NotImplementedError

    def end(self, result):
        """Called once with the end message: the run's totals, or {"error": ...}."""


def _dumps(m):
    return (json.dumps(m, separators=(",", ":")) + "\n").encode()


class Channel:
    """One JSON object per line in each direction."""

    def __init__(self, rfile, wfile):
        self.r, self.w = rfile, wfile

    def read(self):
        line = self.r.readline()
        if not line:
            return None
        try:
            return json.loads(line)
        except ValueError as e:
            raise ProtocolError("not a JSON line: %r (%s)" % (line[:200], e))

    def write(self, m):
        self.w.write(_dumps(m))
        self.w.flush()


def check_hello(m):
    if m is None:
        raise ProtocolError("the input ended before the hello")
    if m.get("type") != "hello":
        raise ProtocolError("want a hello, got %r" % m.get("type"))
    if m.get("protocol") != PROTOCOL:
        raise ProtocolError("sharebench speaks protocol %r, this client %d" % (m.get("protocol"), PROTOCOL))


def plan_for(policy, session, m):
    """Apply a state message and ask the policy for its plan message."""
    state = session.apply(m)
    session.cluster.mark()
    try:
        plan = policy.schedule(state)
    finally:
        session.cluster.rollback()
    return plan.message(state.seq)


def serve(policy, rfile=None, wfile=None):
    """Run policy against sharebench until the end message (or the end of the input).

    The protocol uses the process's real standard output; sys.stdout is pointed at standard
    error, so print() in a policy goes to sharebench's error stream instead of breaking
    the exchange. An exception in the policy is reported to sharebench, which ends the run
    with it, and re-raised.
    """
    if rfile is None:
        rfile = sys.stdin.buffer
    if wfile is None:
        wfile = sys.stdout.buffer
        sys.stdout = sys.stderr
    ch = Channel(rfile, wfile)
    m = ch.read()
    check_hello(m)
    session = Session(m)
    policy.hello(session.hello)
    reply = {"type": "hello", "protocol": PROTOCOL}
    if policy.name:
        reply["name"] = policy.name
    ch.write(reply)
    while True:
        m = ch.read()
        if m is None:
            return None
        kind = m.get("type")
        if kind == "end":
            policy.end(m)
            return m
        if kind != "state":
            raise ProtocolError("want a state or the end, got %r" % kind)
        try:
            out = plan_for(policy, session, m)
        except Exception as e:
            ch.write({"type": "error", "message": "%s: %s" % (type(e).__name__, e)})
            raise
        ch.write(out)
