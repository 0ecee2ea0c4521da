"""Benchmark child: answers each state with the next plan of a recorded file, to measure the
protocol's own cost. With --session it also keeps the client's State (sharebench.Session),
as every Python policy does."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "clients", "python"))

from sharebench import Session  # noqa: E402


def main():
    session = "--session" in sys.argv[1:]
    plans = open([a for a in sys.argv[1:] if not a.startswith("--")][0], "rb")
    rd, wr = sys.stdin.buffer, sys.stdout.buffer
    hello = json.loads(rd.readline())
    s = Session(hello) if session else None
    wr.write(b'{"type":"hello","protocol":1,"name":"replay"}\n')
    wr.flush()
    for line in rd:
        m = json.loads(line)
        if m["type"] == "end":
            return
        if s is not None:
            s.apply(m)
        wr.write(plans.readline())
        wr.flush()


main()
