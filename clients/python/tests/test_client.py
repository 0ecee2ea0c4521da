"""Tests of the Python client; run with `python3 -m unittest discover -s tests -t .` from
clients/python (the Go tests of policy/external run them too)."""

import io
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

from sharebench import Cluster, Session, go_round, seconds, serve  # noqa: E402
from sharebench.protocol import ProtocolError  # noqa: E402
import sjf  # noqa: E402

EXCHANGE = os.path.join(HERE, "..", "..", "..", "policy", "external", "testdata", "exchange.txt")


def exchange():
    """The golden exchange as (direction, line) pairs."""
    with open(EXCHANGE, "rb") as f:
        return [(line[:1], line[2:]) for line in f]


class GoArithmetic(unittest.TestCase):
    def test_round_half_away_from_zero(self):
        for x, want in [(2.5, 3), (3.5, 4), (-2.5, -3), (0.49999999999999994, 0), (1.5, 2), (0.0, 0), (4503599627370497.0, 4503599627370497)]:
            self.assertEqual(go_round(x), want, x)

    def test_seconds(self):
        self.assertEqual(seconds(1_500_000_000), 1.5)
        self.assertEqual(seconds(-1_500_000_000), -1.5)
        self.assertEqual(seconds(123_456_789_012_345), 123456.789012345)


class ClusterView(unittest.TestCase):
    def test_place_release_rollback(self):
        c = Cluster(2, 2, 100, 2)
        c.place(7, [0, 1], 40)
        c.mark()
        c.release(7)
        c.place(8, [1, 2], 70)
        self.assertEqual((c.idle, c.node_idle, c.free[1]), (2, [1, 1], 30))
        c.rollback()
        self.assertEqual((c.idle, c.node_idle, c.jobs[0], c.jobs[1], c.free), (2, [0, 2], [7], [7], [60, 60, 100, 100]))


class GoldenExchange(unittest.TestCase):
    def test_sjf_replays_the_golden_exchange(self):
        """Fed the golden exchange's messages, the Python sjf sends exactly its replies."""
        ex = exchange()
        sent = b"".join(line for d, line in ex if d == b">")
        want = b"".join(line for d, line in ex if d == b"<")
        out = io.BytesIO()
        end = serve(sjf.SJF(), io.BytesIO(sent), out)
        self.assertEqual(out.getvalue().decode(), want.decode())
        self.assertEqual(end["type"], "end")

    def test_session_tracks_the_cluster(self):
        ex = [json.loads(line) for d, line in exchange() if d == b">"]
        s = Session(ex[0])
        st = s.apply(ex[1])
        self.assertEqual([j.id for j in st.pending], [0])
        st = s.apply(ex[2])  # job 0 now runs on both GPUs; job 1 arrived
        self.assertEqual((st.cluster.idle, [j.id for j in st.running], [j.id for j in st.entered]), (0, [0], [1]))
        st = s.apply(ex[3])  # job 0 preempted, job 1 running
        self.assertEqual((st.cluster.jobs, [j.id for j in st.pending]), ([[1], []], [0, 2]))
        self.assertEqual(st.jobs[0].rem_time(st.now), 210_000_000_000)
        # Job-seconds in the system up to t=12 s: job 0 for 12 s, job 1 for 2 s, job 2 for 0.
        self.assertEqual(s.accrued, 14_000_000_000)

    def test_protocol_errors(self):
        with self.assertRaises(ProtocolError):
            serve(sjf.SJF(), io.BytesIO(b'{"type":"hello","protocol":2}\n'), io.BytesIO())
        with self.assertRaises(ProtocolError):
            serve(sjf.SJF(), io.BytesIO(b"not json\n"), io.BytesIO())


if __name__ == "__main__":
    unittest.main()
