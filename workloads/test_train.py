"""Tests for train.py: protocol v1 with --dry-run (no torch needed) and the real models on CPU with --tiny.

Run from the repository root:

    python3 -m unittest discover -s workloads -p 'test_*.py'

Tests that need torch and torchvision skip when they are not importable; the --dry-run tests always run.
"""

import contextlib
import importlib.util
import io
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest
from unittest import mock
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAIN = HERE / "train.py"
CATALOG = json.loads((HERE / "catalog.json").read_text(encoding="utf-8"))["models"]
MODELS = tuple(CATALOG)
# The SJF-BSBF authors' eight models at their batches (Lai-JX/Scheduler, workloads/), named as their traces name them.
AUTHORS = {"resnet18": 128, "shufflenet_v2_x1_0": 128, "vgg16": 16, "vgg19": 16, "bert": 4, "gpt2": 4, "dqn": 128,
           "a2c": 64}

HAVE_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision"))
needs_torch = unittest.skipUnless(HAVE_TORCH, "torch and torchvision are not importable")

# Generous: CI machines have two cores and may be shared, and the first touch of fresh memory can be slow.
EVENT_TIMEOUT = 180.0
EXIT_TIMEOUT = 60.0

# One thread per process: with OpenMP spinning, two threads on a busy two-core machine can be 10x slower.
TINY_CPU = ["--device", "cpu", "--tiny", "--threads", "1", "--warmup-steps", "1", "--warmup-seconds", "0"]
DRY = ["--dry-run", "--warmup-steps", "1", "--warmup-seconds", "0"]

START_FIELDS = {
    "run", "model", "impl", "batch", "sub_batch", "accum", "gpus", "amp", "tf32", "precision", "timing", "device",
    "gpu", "torch", "torchvision", "transformers", "cuda", "cudnn", "python", "pid", "threads", "seed",
    "cpu_affinity", "cuda_visible_devices",
}


class Child:
    """A train.py process whose stdout is read line by line (each line must be JSON) with timeouts."""

    def __init__(self, args, argv_prefix=None):
        prefix = argv_prefix or [sys.executable, str(TRAIN)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            prefix + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, text=True, bufsize=1,
        )
        self.events = []
        self._lines = queue.Queue()
        self._stderr = []
        self._pumps = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump_stdout(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def next_event(self, timeout=EVENT_TIMEOUT):
        """The next event, or None at EOF. Fails on a non-JSON stdout line."""
        line = self._lines.get(timeout=timeout)
        if line is None:
            return None
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise AssertionError(f"stdout line is not JSON: {line!r}") from exc
        self.events.append(event)
        return event

    def expect(self, name, timeout=EVENT_TIMEOUT):
        event = self.next_event(timeout)
        if event is None or event["event"] != name:
            raise AssertionError(f"want {name!r}, got {event!r}; stderr:\n{self.stderr[-3000:]}")
        return event

    def ready(self):
        """Read start and ready; returns ready."""
        self.expect("start")
        return self.expect("ready")

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def close_stdin(self):
        self.proc.stdin.close()

    def drain(self, timeout=EXIT_TIMEOUT):
        """Read the remaining events, wait for exit and return the exit code."""
        deadline = time.monotonic() + timeout
        while self.next_event(max(0.1, deadline - time.monotonic())) is not None:
            pass
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(EXIT_TIMEOUT)
        for pump in self._pumps:  # they end at EOF; closing their pipes under them would raise in the thread
            pump.join(EXIT_TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


def run_to_cap(test, args, argv_prefix=None):
    """Start, wait for ready, send go, read to the end; returns (child, rc)."""
    child = Child(args, argv_prefix)
    test.addCleanup(child.kill)
    child.ready()
    child.send("go")
    return child, child.drain()


def by_event(events, name):
    return [e for e in events if e["event"] == name]


class StreamChecks:
    """Assertions shared by the dry-run and torch tests (a mixin for unittest.TestCase)."""

    def check_stream(self, events, *, model, batch, sub_batch, steps, exit_reason):
        for e in events:
            self.assertEqual(e["v"], 1, e)
        names = [e["event"] for e in events]
        self.assertEqual(names, ["start", "ready"] + ["step"] * steps + ["mem", "done"])

        start = events[0]
        self.assertLessEqual(START_FIELDS, set(start), "start event lacks fields")
        k = batch // sub_batch
        self.assertEqual((start["model"], start["batch"], start["sub_batch"], start["accum"]),
                         (model, batch, sub_batch, k))
        domain = CATALOG[model]["domain"]
        self.assertIn({"nlp": "seq_len", "rl": "play_steps", "cv": "image_size"}[domain], start)

        ready = events[1]
        for field in ("warmup_steps", "warmup_s", "mem_alloc_peak", "mem_reserved_peak", "mem_source"):
            self.assertIn(field, ready)
        self.assertGreaterEqual(ready["warmup_steps"], 1)

        previous_end = 0
        for i, step in enumerate(by_event(events, "step")):
            self.assertEqual(step["i"], i)
            self.assertEqual(len(step["micro_ms"]), k)
            self.assertLess(step["t0_ns"], step["t1_ns"])
            self.assertLessEqual(previous_end, step["t0_ns"], "steps overlap")
            previous_end = step["t1_ns"]
            # The reported step time is exactly the timestamp difference the runner will compute itself.
            self.assertEqual(step["step_ms"], (step["t1_ns"] - step["t0_ns"]) / 1e6)
            self.assertLessEqual(sum(step["micro_ms"]) + step.get("act_ms", 0), step["step_ms"])
            self.assertEqual(step["samples"], batch)

        mem, done = events[-2], events[-1]
        self.assertIn("max_allocated", mem)
        self.assertIn("max_reserved", mem)
        self.assertEqual(done, {"v": 1, "event": "done", "steps": steps, "exit": exit_reason})


def step_overheads_us(events):
    """Gaps between one step's end and the next step's start: the loop's own cost (JSON, flag checks)."""
    steps = by_event(events, "step")
    return [(b["t0_ns"] - a["t1_ns"]) / 1e3 for a, b in zip(steps, steps[1:])]


class DryRunTests(StreamChecks, unittest.TestCase):
    """The protocol with synthetic timings: needs no torch."""

    def test_stream_to_cap(self):
        child, rc = run_to_cap(self, ["--model", "resnet50", "--batch", "8", "--sub-batch", "2",
                                      "--max-steps", "5", *DRY])
        self.assertEqual(rc, 0, child.stderr)
        self.check_stream(child.events, model="resnet50", batch=8, sub_batch=2, steps=5, exit_reason="cap")
        self.assertEqual(child.events[0]["impl"], "dry-run")

    def test_without_torch(self):
        # Make "import torch" fail in the child, as on a host without torch, and run train.py as __main__.
        code = ("import runpy, sys\n"
                "for name in ('torch', 'torchvision', 'transformers'):\n"
                "    sys.modules[name] = None\n"
                "sys.argv = sys.argv[1:]\n"
                "runpy.run_path(sys.argv[0], run_name='__main__')\n")
        child, rc = run_to_cap(self, ["--model", "bert", "--batch", "4", "--sub-batch", "1", "--max-steps", "3",
                                      *DRY], argv_prefix=[sys.executable, "-c", code, str(TRAIN)])
        self.assertEqual(rc, 0, child.stderr)
        self.check_stream(child.events, model="bert", batch=4, sub_batch=1, steps=3, exit_reason="cap")

    def test_stop(self):
        child = Child(["--model", "vgg16", "--batch", "4", *DRY])
        self.addCleanup(child.kill)
        child.ready()
        child.send("go")
        child.expect("step")
        child.expect("step")
        child.send("stop")
        self.assertEqual(child.drain(), 0, child.stderr)
        steps = len(by_event(child.events, "step"))
        self.check_stream(child.events, model="vgg16", batch=4, sub_batch=4, steps=steps, exit_reason="ok")

    def test_eof_is_stop(self):
        child = Child(["--model", "gpt2", "--batch", "2", *DRY])
        self.addCleanup(child.kill)
        child.ready()
        child.send("go")
        child.expect("step")
        child.close_stdin()
        self.assertEqual(child.drain(), 0, child.stderr)
        self.assertEqual(child.events[-1]["exit"], "ok")

    def test_eof_before_go(self):
        child = Child(["--model", "resnet18", "--batch", "8", *DRY])
        self.addCleanup(child.kill)
        child.ready()
        child.close_stdin()
        self.assertEqual(child.drain(), 0, child.stderr)
        self.assertEqual([e["event"] for e in child.events], ["start", "ready", "mem", "done"])
        self.assertEqual(child.events[-1]["steps"], 0)

    def test_warmup_takes_steps_and_seconds(self):
        child = Child(["--model", "bert", "--batch", "2", "--dry-run", "--warmup-steps", "3",
                       "--warmup-seconds", "0.3"])
        self.addCleanup(child.kill)
        ready = child.ready()
        self.assertGreaterEqual(ready["warmup_steps"], 3)
        self.assertGreaterEqual(ready["warmup_s"], 0.3)

    def test_inject_oom(self):
        for phase, before in (("build", ["start"]), ("warmup", ["start"]), ("measure", ["start", "ready"])):
            with self.subTest(phase=phase):
                child = Child(["--model", "resnet50", "--batch", "4", "--inject", f"oom@{phase}", *DRY])
                self.addCleanup(child.kill)
                child.send("go")
                self.assertEqual(child.drain(), 3, child.stderr)
                self.assertEqual([e["event"] for e in child.events], before + ["oom"])
                self.assertEqual(child.events[-1]["phase"], phase)
                self.assertIn("out of memory", child.events[-1]["msg"])

    def test_inject_crash(self):
        child = Child(["--model", "resnet50", "--batch", "4", "--inject", "crash@2", *DRY])
        self.addCleanup(child.kill)
        child.send("go")
        rc = child.drain()
        self.assertNotIn(rc, (0, 2, 3))
        self.assertEqual(len(by_event(child.events, "step")), 2)
        self.assertIn("Traceback", child.stderr)

    def test_inject_hang(self):
        child = Child(["--model", "resnet50", "--batch", "4", "--inject", "hang", *DRY])
        self.addCleanup(child.kill)
        child.ready()
        child.send("go")
        child.send("stop")
        with self.assertRaises(queue.Empty):
            child.next_event(timeout=0.5)
        self.assertIsNone(child.proc.poll(), "a hung child must not exit by itself")

    def test_usage_errors(self):
        cases = {
            "sub-batch does not divide batch": ["--model", "resnet50", "--batch", "8", "--sub-batch", "3"],
            "zero sub-batch": ["--model", "resnet50", "--batch", "8", "--sub-batch", "0"],
            "unknown model": ["--model", "alexnet"],
            "bad injection": ["--model", "bert", "--inject", "oom@later"],
            "sequence too long": ["--model", "bert", "--seq-len", "4096"],
            "image too small": ["--model", "vgg16", "--image-size", "16"],
            "unknown implementation": ["--model", "bert", "--impl", "jax"],
            "bad memory fraction": ["--model", "bert", "--mem-fraction", "1.5"],
            "zero ranks": ["--model", "bert", "--gpus", "0"],
            "rank without a store": ["--model", "bert", "--gpus", "2", "--rank", "1"],
            "negative play steps": ["--model", "dqn", "--play-steps", "-1"],
        }
        for name, args in cases.items():
            with self.subTest(name):
                proc = subprocess.run([sys.executable, str(TRAIN), *args, "--dry-run"], capture_output=True,
                                      text=True, timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertEqual(proc.stdout, "", "usage errors must not write to stdout")

    def test_catalog(self):
        for key in MODELS:
            entry = CATALOG[key]
            with self.subTest(key):
                self.assertEqual(entry["min_sub_batch"], 1 if entry["domain"] == "nlp" else 8)
                self.assertGreater(entry["default_batch"], 0)
                self.assertTrue(entry["impls"])
                self.assertIn("tiny", entry)
                self.assertEqual(entry["authors"], key in AUTHORS)
        for key, batch in AUTHORS.items():
            self.assertEqual(CATALOG[key]["default_batch"], batch, key)
        self.assertEqual(list(CATALOG["bert"]["impls"]), ["transformers", "torch-encoder"])
        self.assertEqual(list(CATALOG["gpt2"]["impls"]), ["transformers", "torch-decoder"])

    def test_precision_flags(self):
        for args, want in ((["--precision", "strict-fp32"], "strict-fp32"), (["--tf32"], "tf32"),
                           (["--strict-fp32"], "strict-fp32"), ([], "default")):
            with self.subTest(args):
                child, rc = run_to_cap(self, ["--model", "resnet50", "--batch", "4", "--max-steps", "1", *args, *DRY])
                self.assertEqual(rc, 0, child.stderr)
                self.assertEqual(child.events[0]["precision"]["mode"], want)
                self.assertEqual(child.events[0]["tf32"], want == "tf32")
        proc = subprocess.run([sys.executable, str(TRAIN), "--model", "bert", "--tf32", "--strict-fp32", "--dry-run"],
                              capture_output=True, text=True, timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 2, proc.stderr)

    def test_dry_run_reports_gpus(self):
        child, rc = run_to_cap(self, ["--model", "gpt2", "--batch", "2", "--gpus", "4", "--max-steps", "1", *DRY])
        self.assertEqual(rc, 0, child.stderr)
        self.assertEqual(child.events[0]["gpus"], 4)


class ServeChecks:
    """Assertions on a warm worker's stream (--serve): a mixin for unittest.TestCase."""

    def serve_windows(self, child, windows, steps_before_stop=2):
        """Drive a started worker through warmup and `windows` stopped windows; return the events of each window."""
        child.expect("start")
        loaded = child.expect("loaded")
        self.assertGreaterEqual(loaded["build_s"], 0)
        child.send("warmup")
        ready = child.expect("ready")
        self.assertGreaterEqual(ready["warmup_steps"], 1)
        self.assertGreater(ready["warmup_step_ms"], 0)
        out = []
        for _ in range(windows):
            child.send("go")
            seen = [child.expect("step") for _ in range(steps_before_stop)]
            child.send("stop")
            while True:
                event = child.next_event()
                self.assertIsNotNone(event, child.stderr[-3000:])
                seen.append(event)
                if event["event"] == "idle":
                    break
            out.append(seen)
        return out

    def check_window(self, events, batch, sub_batch):
        names = [e["event"] for e in events]
        self.assertEqual(names, ["step"] * (len(names) - 2) + ["mem", "idle"])
        steps = by_event(events, "step")
        self.assertEqual([s["i"] for s in steps], list(range(len(steps))), "each window counts its steps from 0")
        for step in steps:
            self.assertEqual(len(step["micro_ms"]), batch // sub_batch)
            self.assertEqual(step["step_ms"], (step["t1_ns"] - step["t0_ns"]) / 1e6)
            self.assertEqual(step["samples"], batch)
        self.assertEqual(events[-1], {"v": 1, "event": "idle", "steps": len(steps), "exit": "ok"})
        self.assertNotIn("mem_device_bytes", events[-2], "the driver is read after the warm-up, not per window")


class ServeTests(ServeChecks, unittest.TestCase):
    """The warm worker (--serve) with --dry-run: needs no torch."""

    def test_windows_then_quit(self):
        child = Child(["--model", "resnet18", "--batch", "8", "--sub-batch", "4", "--serve", *DRY])
        self.addCleanup(child.kill)
        windows = self.serve_windows(child, 3)
        for events in windows:
            self.check_window(events, 8, 4)
        child.send("quit")
        self.assertEqual(child.drain(), 0, child.stderr)
        total = sum(len(by_event(w, "step")) for w in windows)
        self.assertEqual(child.events[-1], {"v": 1, "event": "done", "steps": total, "exit": "ok"})

    def test_eof_is_quit(self):
        child = Child(["--model", "bert", "--batch", "2", "--serve", *DRY])
        self.addCleanup(child.kill)
        self.serve_windows(child, 1)
        child.close_stdin()
        self.assertEqual(child.drain(), 0, child.stderr)
        self.assertEqual(child.events[-1]["event"], "done")

    def test_stop_right_after_go_is_not_lost(self):
        # The stop may reach the worker before it has started the window: it must still end that window.
        child = Child(["--model", "vgg16", "--batch", "4", "--serve", *DRY])
        self.addCleanup(child.kill)
        self.serve_windows(child, 0)
        for _ in range(3):
            child.proc.stdin.write("go\nstop\n")
            child.proc.stdin.flush()
            while child.next_event()["event"] != "idle":
                pass
        child.send("quit")
        self.assertEqual(child.drain(), 0, child.stderr)

    def test_step_cap_per_window(self):
        child = Child(["--model", "dqn", "--batch", "8", "--max-steps", "3", "--serve", *DRY])
        self.addCleanup(child.kill)
        self.serve_windows(child, 0)
        for _ in range(2):
            child.send("go")
            names = [child.next_event()["event"] for _ in range(5)]
            self.assertEqual(names, ["step"] * 3 + ["mem", "idle"])
            self.assertEqual(child.events[-1]["exit"], "cap")
            child.send("stop")  # late: the window already ended at its cap
        child.send("quit")
        self.assertEqual(child.drain(), 0, child.stderr)
        self.assertEqual(child.events[-1]["steps"], 6)

    def test_inject(self):
        cases = (("oom@build", ["start", "oom"], 3), ("oom@warmup", ["start", "loaded", "oom"], 3),
                 ("oom@measure", ["start", "loaded", "ready", "oom"], 3))
        for spec, want, rc in cases:
            with self.subTest(spec):
                child = Child(["--model", "resnet50", "--batch", "4", "--serve", "--inject", spec, *DRY])
                self.addCleanup(child.kill)
                child.send("warmup")
                child.send("go")
                self.assertEqual(child.drain(), rc, child.stderr)
                self.assertEqual([e["event"] for e in child.events], want)
        child = Child(["--model", "resnet50", "--batch", "4", "--serve", "--inject", "crash@2", *DRY])
        self.addCleanup(child.kill)
        child.send("warmup")
        child.send("go")
        self.assertNotIn(child.drain(), (0, 2, 3))
        self.assertEqual(len(by_event(child.events, "step")), 2)

    def test_usage(self):
        proc = subprocess.run([sys.executable, str(TRAIN), "--model", "bert", "--serve", "--gpus", "2", "--dry-run"],
                              capture_output=True, text=True, timeout=EXIT_TIMEOUT, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--serve", proc.stderr)


class CommandPipeTests(unittest.TestCase):
    """The parent's commands survive code in the worker that closes or replaces descriptor 0 (on an H200, a warm
    worker read EINVAL from it and lost its commands), and a pipe left non-blocking is waited on, not taken for its
    end. In-process: descriptor 0 is swapped for a pipe and restored."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, str(HERE))
        import train  # noqa: PLC0415 - the module under test, without torch

        cls.train = train

    def pipe_on_stdin(self):
        saved = os.dup(0)
        self.addCleanup(os.close, saved)
        self.addCleanup(os.dup2, saved, 0)
        r, w = os.pipe()
        os.dup2(r, 0)
        os.close(r)
        fd = self.train.claim_stdin()
        self.addCleanup(os.close, fd)
        return fd, w

    def test_commands_survive_a_replaced_stdin(self):
        fd, w = self.pipe_on_stdin()
        os.close(0)  # what a library did to the worker's descriptor 0
        other = os.open(os.devnull, os.O_RDONLY)  # the lowest free descriptor: 0 again
        self.assertEqual(other, 0)
        os.write(w, b"go\n")
        os.close(w)
        self.assertEqual(self.train.read_commands(fd), b"go\n")
        self.assertEqual(self.train.read_commands(fd), b"")

    def test_non_blocking_pipe_is_waited_on(self):
        fd, w = self.pipe_on_stdin()
        os.set_blocking(fd, False)
        writer = threading.Timer(0.2, lambda: (os.write(w, b"stop\n"), os.close(w)))
        writer.start()
        self.addCleanup(writer.join)
        self.assertEqual(self.train.read_commands(fd), b"stop\n")


@needs_torch
class TorchServeTests(ServeChecks, unittest.TestCase):
    """A warm worker with a real model on CPU: one build, several windows."""

    def test_windows(self):
        for model in ("resnet18", "bert", "a2c"):
            with self.subTest(model):
                child = Child(["--model", model, "--batch", "4", "--sub-batch", "2", "--serve", *TINY_CPU])
                self.addCleanup(child.kill)
                for events in self.serve_windows(child, 2):
                    self.check_window(events, 4, 2)
                child.send("quit")
                self.assertEqual(child.drain(), 0, child.stderr[-3000:])
                self.assertEqual(child.events[-1]["event"], "done")


@needs_torch
class TorchTinyTests(StreamChecks, unittest.TestCase):
    """The real models on CPU with --tiny (Debian 12: torch 1.13, torchvision 0.14, no transformers)."""

    observed = {}

    @classmethod
    def tearDownClass(cls):
        if cls.observed:
            lines = [f"{'model':10} {'impl':14} {'median step ms':>15} {'median gap us':>14}"]
            for model, (impl, step_ms, gap_us) in cls.observed.items():
                lines.append(f"{model:10} {impl:14} {step_ms:15.1f} {gap_us:14.1f}")
            print("\ntiny CPU runs (batch 4, sub-batch 2):\n" + "\n".join(lines), file=sys.stderr)

    def test_each_model(self):
        for model in MODELS:
            with self.subTest(model):
                child, rc = run_to_cap(self, ["--model", model, "--batch", "4", "--sub-batch", "2",
                                              "--max-steps", "3", *TINY_CPU])
                self.assertEqual(rc, 0, child.stderr[-3000:])
                self.check_stream(child.events, model=model, batch=4, sub_batch=2, steps=3, exit_reason="cap")
                start, ready = child.events[0], child.events[1]
                self.assertEqual(start["device"], "cpu")
                self.assertIn(start["impl"], CATALOG[model]["impls"])
                self.assertEqual(ready["mem_source"], "rss")
                self.assertGreater(ready["mem_reserved_peak"], 0)
                self.assertGreater(ready["params"], 0)
                steps = by_event(child.events, "step")
                self.observed[model] = (start["impl"], statistics.median(s["step_ms"] for s in steps),
                                        statistics.median(step_overheads_us(child.events)))

    def test_stop(self):
        child = Child(["--model", "bert", "--batch", "2", *TINY_CPU])
        self.addCleanup(child.kill)
        child.ready()
        child.send("go")
        child.expect("step")
        child.expect("step")
        child.send("stop")
        self.assertEqual(child.drain(), 0, child.stderr[-3000:])
        steps = len(by_event(child.events, "step"))
        self.check_stream(child.events, model="bert", batch=2, sub_batch=2, steps=steps, exit_reason="ok")

    def test_eof_is_stop(self):
        child = Child(["--model", "gpt2", "--batch", "2", "--sub-batch", "1", *TINY_CPU])
        self.addCleanup(child.kill)
        child.ready()
        child.send("go")
        child.expect("step")
        child.close_stdin()
        self.assertEqual(child.drain(), 0, child.stderr[-3000:])
        self.assertEqual(child.events[-1]["exit"], "ok")

    def test_inject_oom_warmup(self):
        child = Child(["--model", "bert", "--batch", "2", "--inject", "oom@warmup", *TINY_CPU])
        self.addCleanup(child.kill)
        self.assertEqual(child.drain(), 3, child.stderr[-3000:])
        self.assertEqual([e["event"] for e in child.events], ["start", "oom"])
        self.assertEqual(child.events[-1]["phase"], "warmup")

    def test_inject_crash(self):
        child = Child(["--model", "bert", "--batch", "2", "--inject", "crash@1", *TINY_CPU])
        self.addCleanup(child.kill)
        child.ready()
        child.send("go")
        rc = child.drain()
        self.assertNotIn(rc, (0, 2, 3))
        self.assertEqual(len(by_event(child.events, "step")), 1)
        self.assertIn("Traceback", child.stderr)

    def test_two_rank_gloo_job(self):
        """A job of two processes (torch.distributed, gloo on CPU): rank 0 speaks the protocol, rank 1 follows."""
        child, rc = run_to_cap(self, ["--model", "resnet18", "--batch", "4", "--sub-batch", "2", "--gpus", "2",
                                      "--max-steps", "3", *TINY_CPU])
        self.assertEqual(rc, 0, child.stderr[-3000:])
        self.check_stream(child.events, model="resnet18", batch=4, sub_batch=2, steps=3, exit_reason="cap")
        self.assertEqual((child.events[0]["gpus"], child.events[0]["dist_backend"]), (2, "gloo"))

    def test_failed_rank_fails_the_job(self):
        child = Child(["--model", "bert", "--batch", "2", "--gpus", "2", *TINY_CPU])
        self.addCleanup(child.kill)
        child.ready()
        ranks = [int(p) for p in Path(f"/proc/{child.proc.pid}/task/{child.proc.pid}/children").read_text().split()]
        self.assertEqual(len(ranks), 1, "rank 0 starts one other rank")
        os.kill(ranks[0], 9)
        rc = child.drain()
        self.assertEqual(rc, 1, child.stderr[-3000:])
        self.assertIn("rank 1 exited", child.stderr)

    def test_bf16_autocast(self):
        child, rc = run_to_cap(self, ["--model", "gpt2", "--batch", "2", "--amp", "bf16", "--max-steps", "1",
                                      *TINY_CPU])
        self.assertEqual(rc, 0, child.stderr[-3000:])
        self.assertEqual(child.events[0]["amp"], "bf16")


@needs_torch
class ModelTests(unittest.TestCase):
    """In-process checks of models.py and torch_session.py."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, str(HERE))
        import torch  # noqa: PLC0415 - only when torch exists

        torch.set_num_threads(1)

    def test_fallback_sizes_match_catalog(self):
        import models  # noqa: PLC0415

        for key, impl in (("bert", "torch-encoder"), ("gpt2", "torch-decoder")):
            with self.subTest(key):
                model = models.build(key, impl, image_size=None, seq_len=128, tiny=False).model
                params = sum(p.numel() for p in model.parameters())
                self.assertEqual(params, CATALOG[key]["impls"][impl]["params"])
                head = model.decoder if key == "bert" else model.lm_head
                self.assertIs(head.weight, model.tokens.weight, "output projection must be tied")

    def test_transformers_wiring(self):
        """The transformers path, against a stand-in module (Debian 12 does not package transformers)."""
        import torch  # noqa: PLC0415
        import models  # noqa: PLC0415

        class Config:
            def __init__(self, **kwargs):
                self.kwargs = kwargs

        class LM(torch.nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
                self.weight = torch.nn.Parameter(torch.ones(1))

            def forward(self, input_ids, attention_mask, labels):
                self.seen = (input_ids.shape, attention_mask.shape, labels is input_ids)
                return types.SimpleNamespace(loss=self.weight.sum() * input_ids.float().mean())

        fake = types.ModuleType("transformers")
        fake.__version__ = "0.0-test"
        fake.BertConfig = fake.GPT2Config = Config
        fake.BertForMaskedLM = fake.GPT2LMHeadModel = LM

        with mock.patch.dict(sys.modules, {"transformers": fake}):
            self.assertEqual(models.resolve_impl("bert", "auto", CATALOG["bert"]["impls"]), "transformers")
            bert = models.build("bert", "transformers", image_size=None, seq_len=16, tiny=True)
            gpt2 = models.build("gpt2", "transformers", image_size=None, seq_len=16, tiny=False)
        self.assertEqual(bert.model.config.kwargs, dict(
            vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
            max_position_embeddings=512))
        self.assertEqual(gpt2.model.config.kwargs, dict(
            vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_inner=3072, n_positions=1024, use_cache=False))
        batch = bert.make_batch(3, torch.device("cpu"))
        bert.loss(bert.model, batch).backward()
        self.assertEqual(bert.model.seen, (torch.Size([3, 16]), torch.Size([3, 16]), True))

        # "import transformers" fails; the fallback notice goes to stderr, kept out of the test output.
        with mock.patch.dict(sys.modules, {"transformers": None}), contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(models.resolve_impl("bert", "auto", CATALOG["bert"]["impls"]), "torch-encoder")
            self.assertEqual(models.resolve_impl("gpt2", "auto", CATALOG["gpt2"]["impls"]), "torch-decoder")
            with self.assertRaises(models.UnavailableImplementation):
                models.resolve_impl("bert", "transformers", CATALOG["bert"]["impls"])

    def test_oom_detection(self):
        import torch  # noqa: PLC0415
        import torch_session  # noqa: PLC0415

        is_oom = torch_session.is_oom
        self.assertTrue(is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")))
        self.assertTrue(is_oom(torch_session.TorchSession.synthetic_oom("build")))
        self.assertTrue(is_oom(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")))
        self.assertTrue(is_oom(RuntimeError("cuDNN error: CUDNN_STATUS_ALLOC_FAILED")))
        self.assertTrue(is_oom(MemoryError()))
        wrapped = ValueError("step failed")
        wrapped.__cause__ = RuntimeError("NCCL error: unhandled cuda error: Cuda failure 'out of memory'")
        self.assertTrue(is_oom(wrapped), "an allocation failure as the cause of another error")
        self.assertFalse(is_oom(RuntimeError("shape mismatch")))
        self.assertFalse(is_oom(ValueError("out of memory")))
        if hasattr(torch.cuda, "OutOfMemoryError"):
            self.assertTrue(is_oom(torch.cuda.OutOfMemoryError("x")))

    def test_rl_sizes_and_micro_batches(self):
        import torch  # noqa: PLC0415
        import models  # noqa: PLC0415

        for key, extra in (("dqn", dict(play_steps=2)), ("a2c", dict(rollout_length=2))):
            with self.subTest(key):
                w = models.build(key, "atari", image_size=None, seq_len=None, tiny=True, **extra)
                trainable = sum(p.numel() for p in w.model.parameters() if p.requires_grad)
                self.assertEqual(trainable, CATALOG[key]["impls"]["atari"]["params"])
                batch = w.make_batch(6, torch.device("cpu"))
                parts = [w.micro_batch(batch, j, 3) for j in range(2)]
                for name, t in batch.items():
                    dim = w.batch_dims.get(name, 0)
                    if dim is None:
                        self.assertIs(parts[0][name], t, f"{name} is shared by the micro-batches")
                    else:
                        self.assertEqual(parts[1][name].shape[dim], 3, name)
                        self.assertEqual(parts[1][name].data_ptr() != t.data_ptr(), True, f"{name}: second half")
                if w.act is not None:
                    w.act(w.model, batch)
                w.loss(w.model, parts[0]).backward()
                self.assertTrue(all(p.grad is not None for p in w.model.parameters() if p.requires_grad))
        learner = models.build("dqn", "atari", image_size=None, seq_len=None, tiny=True, play_steps=0).model
        self.assertTrue(all(p.grad is None for p in learner.target.parameters()), "the target network is frozen")

    def test_step_clock_and_acting(self):
        import torch  # noqa: PLC0415
        import torch_session  # noqa: PLC0415

        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = torch.ones(4, 4)
        acted = []
        micro = [lambda j=j: {"x": data[2 * j:2 * j + 2]} for j in range(2)]
        t0, t1, spans, act_ns = torch_session.accumulation_step(
            model, opt, micro, lambda m, b: m(b["x"]).sum(), contextlib.nullcontext, torch_session.WallClock(),
            act=lambda: (acted.append(1), time.sleep(0.01)))
        self.assertEqual(acted, [1])
        self.assertEqual(len(spans), 2)
        self.assertGreaterEqual(act_ns, 10_000_000)
        self.assertLessEqual(sum(spans) + act_ns, t1 - t0)

    def test_precision_report(self):
        import torch_session  # noqa: PLC0415

        report = torch_session.precision_report("default", cuda=False)
        self.assertEqual(report["mode"], "default")
        self.assertIn("note", report)
        self.assertIn(report["conv_tf32"], (True, False, None))
        with self.assertRaises(torch_session.SetupError):
            torch_session.apply_precision("fp64")

    def test_ddp_accumulation_uses_no_sync(self):
        import torch  # noqa: PLC0415
        import torch.distributed as dist  # noqa: PLC0415
        import models  # noqa: PLC0415
        import torch_session  # noqa: PLC0415

        if not dist.is_available():
            self.skipTest("torch.distributed is not available")
        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method=Path(tmp, "rendezvous").as_uri(), rank=0, world_size=1)
            try:
                workload = models.build("bert", "torch-encoder", image_size=None, seq_len=8, tiny=True)
                model = torch_session.wrap_distributed(workload.model, torch.device("cpu"))
                self.assertIsInstance(model, torch.nn.parallel.DistributedDataParallel)
                entered = []
                real_no_sync = model.no_sync

                def counting_no_sync():
                    entered.append(1)
                    return real_no_sync()

                model.no_sync = counting_no_sync
                batch = workload.make_batch(6, torch.device("cpu"))
                micro = [lambda j=j: {n: t[2 * j:2 * j + 2] for n, t in batch.items()} for j in range(3)]
                t0, t1, micro_ns, _ = torch_session.accumulation_step(
                    model, workload.make_optimizer(model.parameters()), micro, workload.loss,
                    contextlib.nullcontext, torch_session.WallClock())
                self.assertEqual(len(entered), 2, "first k-1 of k=3 micro-steps skip the all-reduce")
                self.assertEqual(len(micro_ns), 3)
                self.assertLess(t0, t1)
                self.assertTrue(all(p.grad is None for p in model.parameters()), "zero_grad(set_to_none=True)")
            finally:
                dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()
