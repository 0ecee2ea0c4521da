#!/usr/bin/env python3
"""sharebench workload: one training process that speaks protocol v1 (JSON lines) on stdout and stdin.

The runner starts this script once per solo or pair run. The process builds a model with random weights and
synthetic data on the device, warms up, prints ``ready`` and waits for ``go``; it then times every optimizer step
(k = batch / sub-batch gradient-accumulation micro-steps plus the update) until ``stop``, EOF on stdin or the step
cap. With ``--serve`` the process is a warm worker instead: it builds the model once and then runs warm-ups and
measurement windows on command until ``quit``, so that a campaign pays the process start, the CUDA initialisation
and the model build once per configuration rather than once per run. See README.md for the protocol, the flags
and the exit codes.

This file imports only the standard library. torch (and torchvision, transformers) are imported by
``torch_session`` and ``models``, which ``--dry-run`` never loads, so the protocol can be exercised on hosts
without torch.
"""

import argparse
import dataclasses
import json
import os
import platform
import queue
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

PROTOCOL_VERSION = 1

EXIT_OK = 0
EXIT_ERROR = 1  # setup failure (no CUDA device, implementation not available); uncaught exceptions also exit 1
EXIT_USAGE = 2
EXIT_OOM = 3

CATALOG_PATH = Path(__file__).resolve().parent / "catalog.json"

MIN_IMAGE_SIZE = 32  # ResNet and VGG halve the resolution five times
OOM_MESSAGE_LIMIT = 2000  # characters of the exception text carried in the oom event
INJECT_PHASES = ("build", "warmup", "measure")
DEFAULT_THREADS = 2  # as Muri: leaves CPU for the co-runner in pair runs
PRECISIONS = ("default", "strict-fp32", "tf32")
MAX_RANKS = 64
WORKER_EXIT_TIMEOUT = 60.0  # seconds rank 0 waits for the other ranks to exit after the measurement

# --dry-run timing and memory model: small, deterministic (seeded jitter) and monotone in the sub-batch, so that
# protocol tests run fast and still see k micro-steps whose cost grows with b.
DRY_MICRO_BASE_MS = 0.5
DRY_MICRO_PER_SAMPLE_MS = 0.02
DRY_OPTIMIZER_MS = 0.2
DRY_JITTER = 0.05
DRY_MEM_BASE = 512 << 20
DRY_MEM_PER_SAMPLE = 16 << 20

# What a session's step() returns: start and end (time.monotonic_ns), each micro-step's duration in nanoseconds,
# and the duration of the step's acting phase (deep RL) or None.
StepTiming = Tuple[int, int, List[int], Optional[int]]


class UsageError(Exception):
    """Invalid combination of flags; reported through argparse, exit code 2."""


class SetupError(Exception):
    """The host cannot run the requested configuration (e.g. --device cuda without a GPU); exit code 1."""


class InjectedCrash(RuntimeError):
    """Raised by --inject crash@N. Deliberately not caught, so the process dies with a traceback."""


class SyntheticOOM(RuntimeError):
    """The out-of-memory error --dry-run raises for --inject oom@PHASE."""


# ---------------------------------------------------------------------------------------------------------------
# Configuration


@dataclasses.dataclass(frozen=True)
class Injection:
    """A failure to inject: ``kind`` is "", "oom", "crash" or "hang"."""

    kind: str = ""
    phase: str = ""
    step: int = -1

    def oom_in(self, phase: str) -> bool:
        return self.kind == "oom" and self.phase == phase

    def crash_at(self, step: int) -> bool:
        return self.kind == "crash" and self.step == step


def parse_injection(text: Optional[str]) -> Injection:
    """Parse ``--inject``: oom@build, oom@warmup, oom@measure, crash@N (N = measured step index) or hang."""
    if not text:
        return Injection()
    if text == "hang":
        return Injection(kind="hang")
    kind, _, arg = text.partition("@")
    if kind == "oom" and arg in INJECT_PHASES:
        return Injection(kind="oom", phase=arg)
    if kind == "crash" and arg.isdigit():
        return Injection(kind="crash", step=int(arg))
    raise UsageError(f"--inject {text!r}: want oom@build, oom@warmup, oom@measure, crash@N or hang")


@dataclasses.dataclass(frozen=True)
class Config:
    """Validated settings of one workload process."""

    model: str
    domain: str  # "cv" or "nlp"
    impls: Tuple[str, ...]
    impl: str  # requested: "auto" or an implementation key
    batch: int
    sub_batch: int
    accum: int
    seq_len: Optional[int]
    image_size: Optional[int]
    device: str
    warmup_steps: int
    warmup_seconds: float
    max_steps: int
    amp: str
    precision: str
    threads: int
    seed: int
    run_id: str
    h2d: bool
    tiny: bool
    dry_run: bool
    mem_fraction: Optional[float]
    inject: Injection
    play_steps: int = 0  # dqn: greedy actions per optimizer step
    rollout_length: int = 0  # a2c: environment steps per optimizer step
    world_size: int = 1  # processes (GPUs) of the job; rank 0 speaks the protocol
    rank: int = 0
    dist_store: str = ""  # torch.distributed file store shared by the ranks
    parent_pid: int = 0  # ranks > 0: rank 0's pid
    serve: bool = False  # a warm worker: warm-ups and measurement windows on command (serve())

    @property
    def tf32(self) -> bool:
        return self.precision == "tf32"


def load_catalog(path: Path = CATALOG_PATH) -> Dict[str, dict]:
    """The model catalog (catalog.json) keyed by model name."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)["models"]


def build_parser(catalog: Dict[str, dict]) -> argparse.ArgumentParser:
    """Command-line flags (README.md, "Flags")."""
    p = argparse.ArgumentParser(
        prog="train.py",
        description="sharebench training workload speaking protocol v1 (JSON lines) on stdout/stdin.",
    )
    p.add_argument("--model", required=True, choices=list(catalog), help="model key from catalog.json")
    p.add_argument("--impl", default="auto",
                   help="implementation key from catalog.json, or 'auto' (transformers if importable)")
    p.add_argument("--batch", type=int, help="global per-GPU batch B (default: the catalog's default_batch)")
    p.add_argument("--sub-batch", type=int, help="micro-batch b; B/b must be an integer (default: B)")
    p.add_argument("--seq-len", type=int, help="sequence length for NLP models (default: the catalog's, 512; 32 with --tiny)")
    p.add_argument("--image-size", type=int, help="image side for CNNs (default 224; 32 with --tiny)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--warmup-steps", type=int, default=20, help="at least this many warm-up steps")
    p.add_argument("--warmup-seconds", type=float, default=10.0, help="and at least this long")
    p.add_argument("--max-steps", type=int, default=0, help="step cap after go (0: none; stop ends the run)")
    p.add_argument("--amp", choices=("off", "bf16"), default="off")
    p.add_argument("--precision", choices=PRECISIONS, default="default",
                   help="FP32 math: PyTorch's default (cuDNN convolutions may use TF32, matmuls do not), "
                        "strict-fp32 (no TF32) or tf32 (TF32 everywhere)")
    p.add_argument("--tf32", action="store_true", help="the same as --precision tf32")
    p.add_argument("--strict-fp32", action="store_true", help="the same as --precision strict-fp32")
    p.add_argument("--gpus", type=int, default=1,
                   help="processes of the job, one per GPU (torch.distributed: NCCL on CUDA, gloo on CPU)")
    p.add_argument("--play-steps", type=int, help="dqn: greedy actions per optimizer step (default from the catalog)")
    p.add_argument("--rollout-length", type=int, help="a2c: environment steps per update (default from the catalog)")
    p.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--dist-store", default="", help=argparse.SUPPRESS)
    p.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="torch and OpenMP CPU threads")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--run-id", default="", help="run identifier echoed in the start event")
    p.add_argument("--h2d", action="store_true", help="copy each micro-batch from pinned host memory")
    p.add_argument("--tiny", action="store_true", help="shrink models and inputs for CPU tests")
    p.add_argument("--dry-run", action="store_true", help="synthetic timings, no torch import")
    p.add_argument("--mem-fraction", type=float,
                   help="cap this process's CUDA caching allocator at F of the GPU memory (emulates a smaller GPU)")
    p.add_argument("--inject", help="oom@build | oom@warmup | oom@measure | crash@N | hang")
    p.add_argument("--serve", action="store_true",
                   help="warm worker: build once, then run warm-ups and measurement windows on command until quit")
    return p


def resolve_config(args: argparse.Namespace, catalog: Dict[str, dict]) -> Config:
    """Apply catalog defaults and check the flags; raises UsageError."""
    entry = catalog[args.model]
    impls = tuple(entry["impls"])
    if args.impl != "auto" and args.impl not in impls:
        raise UsageError(f"--impl {args.impl!r}: {args.model} has {', '.join(impls)} (or auto)")

    batch = entry["default_batch"] if args.batch is None else args.batch
    sub_batch = batch if args.sub_batch is None else args.sub_batch
    if batch < 1 or sub_batch < 1:
        raise UsageError("--batch and --sub-batch must be positive")
    if batch % sub_batch:
        raise UsageError(f"--sub-batch {sub_batch} does not divide --batch {batch}")

    tiny = entry.get("tiny", {}) if args.tiny else {}
    seq_len = image_size = None
    play_steps = rollout_length = 0
    if entry["domain"] == "nlp":
        seq_len = args.seq_len or tiny.get("seq_len") or entry["seq_len"]
        if not 2 <= seq_len <= entry["max_seq_len"]:
            raise UsageError(f"--seq-len {seq_len}: {args.model} takes 2..{entry['max_seq_len']}")
    elif entry["domain"] == "rl":
        play_steps = args.play_steps if args.play_steps is not None else tiny.get("play_steps", entry.get("play_steps", 0))
        rollout_length = (args.rollout_length if args.rollout_length is not None
                          else tiny.get("rollout_length", entry.get("rollout_length", 0)))
        if play_steps < 0 or (args.model == "a2c" and rollout_length < 1):
            raise UsageError("--play-steps must not be negative and --rollout-length must be positive")
    else:
        image_size = args.image_size or tiny.get("image_size") or entry["image_size"]
        if image_size < MIN_IMAGE_SIZE:
            raise UsageError(f"--image-size {image_size}: at least {MIN_IMAGE_SIZE}")
    precision = args.precision
    if args.tf32 or args.strict_fp32:
        if args.tf32 and args.strict_fp32 or precision != "default":
            raise UsageError("give one of --precision, --tf32 and --strict-fp32")
        precision = "tf32" if args.tf32 else "strict-fp32"
    if not 1 <= args.gpus <= MAX_RANKS:
        raise UsageError(f"--gpus {args.gpus}: want 1..{MAX_RANKS}")
    if not 0 <= args.rank < args.gpus or (args.rank > 0) != bool(args.dist_store):
        raise UsageError("--rank and --dist-store are set by rank 0 for the other ranks")
    if args.serve and args.gpus > 1:
        raise UsageError("--serve runs a job of one process: it cannot be combined with --gpus > 1")

    if args.warmup_steps < 0 or args.warmup_seconds < 0 or args.max_steps < 0:
        raise UsageError("--warmup-steps, --warmup-seconds and --max-steps must not be negative")
    if args.threads < 1:
        raise UsageError("--threads must be at least 1")
    if args.mem_fraction is not None and not 0 < args.mem_fraction <= 1:
        raise UsageError("--mem-fraction must be in (0, 1]")

    return Config(
        model=args.model, domain=entry["domain"], impls=impls, impl=args.impl,
        batch=batch, sub_batch=sub_batch, accum=batch // sub_batch,
        seq_len=seq_len, image_size=image_size, device=args.device,
        warmup_steps=args.warmup_steps, warmup_seconds=args.warmup_seconds, max_steps=args.max_steps,
        amp=args.amp, precision=precision, threads=args.threads, seed=args.seed, run_id=args.run_id,
        h2d=args.h2d, tiny=args.tiny, dry_run=args.dry_run, mem_fraction=args.mem_fraction,
        inject=parse_injection(args.inject), play_steps=play_steps, rollout_length=rollout_length,
        world_size=args.gpus, rank=args.rank, dist_store=args.dist_store, parent_pid=args.parent_pid,
        serve=args.serve,
    )


# ---------------------------------------------------------------------------------------------------------------
# Protocol I/O


def claim_stdout():
    """Reserve the real stdout for protocol lines and return a text stream on it.

    File descriptor 1 is pointed at stderr afterwards, so anything else that writes to stdout - Python code or a
    C extension printing a warning - lands in the run's log instead of the protocol stream.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(protocol_fd, "w", encoding="utf-8", buffering=1)


def claim_stdin() -> int:
    """Reserve the parent's command pipe and return a private descriptor on it.

    File descriptor 0 is pointed at /dev/null afterwards, so that nothing else in the process can close, replace or
    read the pipe (on an H200, shufflenet's warm workers read EINVAL from descriptor 0 after their warm-up and lost
    their commands). Without a stdin at all, descriptor 0 is returned and reads end at once.
    """
    try:
        commands_fd = os.dup(0)
    except OSError:
        return 0
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return commands_fd


class Protocol:
    """Writes protocol v1 events: one compact JSON object per line, flushed at once."""

    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()  # rank 0's watcher thread may report a failed rank

    def emit(self, event: str, **fields) -> None:
        record = {"v": PROTOCOL_VERSION, "event": event}
        record.update(fields)
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            if self._stream is not None:
                self._stream.write(line)
                self._stream.flush()


def read_commands(fd: int) -> bytes:
    """The next bytes of the parent's commands on fd, or b"" at its end (logged with the reason).

    A descriptor left non-blocking (the open pipe is shared with any child that inherited it) is waited on rather
    than taken for the end: only EOF or a closed descriptor ends the commands."""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        except OSError as exc:  # stdin closed or not open at all: the same as EOF
            log(f"commands: stdin unreadable ({exc!r}): taken as the end")
            return b""
        if not chunk:
            log("commands: end of stdin")
        return chunk


def command_lines(fd: int):
    """Yield the parent's commands on fd line by line until their end, a last one without a newline included."""
    pending = b""
    while True:
        chunk = read_commands(fd)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line
    yield pending


class Commands:
    """Reads the parent's commands from stdin on a background thread.

    ``go`` releases :meth:`wait_for_go`; ``stop`` or EOF sets :attr:`stop_requested`, which the main loop checks
    between steps (EOF counts as stop, so a child never outlives a dead parent). The thread uses os.read on the
    raw descriptor: a daemon thread blocked inside sys.stdin's buffered reader can abort interpreter shutdown.
    """

    def __init__(self, fd: int = 0):
        self._fd = fd
        self._cond = threading.Condition()
        self.go_received = False
        self.stop_requested = False
        self._thread = threading.Thread(target=self._read, name="commands", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait_for_go(self) -> None:
        """Block until go, stop or EOF arrives."""
        with self._cond:
            self._cond.wait_for(lambda: self.go_received or self.stop_requested)

    def _read(self) -> None:
        for line in command_lines(self._fd):
            self._handle(line)
        self._set("stop_requested")

    def _handle(self, raw: bytes) -> None:
        command = raw.decode("utf-8", "replace").strip()
        if command == "go":
            self._set("go_received")
        elif command == "stop":
            self._set("stop_requested")
        elif command:
            log(f"ignoring unknown command {command!r}")

    def _set(self, flag: str) -> None:
        with self._cond:
            setattr(self, flag, True)
            self._cond.notify_all()


class ServeCommands:
    """The commands of a warm worker (``--serve``), in arrival order: ``warmup``, ``go``, ``stop`` and ``quit``.

    A background thread queues every command; EOF on stdin queues ``quit``, so a worker never outlives a dead
    parent. Between windows the worker blocks on :meth:`next`; during a window it polls the queue between steps
    (:attr:`stop_requested`), so a ``stop`` that arrives right after ``go`` is never lost, whatever the timing.
    """

    COMMANDS = ("warmup", "go", "stop", "quit")

    def __init__(self, fd: int = 0):
        self._fd = fd
        self._queue: "queue.Queue[str]" = queue.Queue()
        self.quit_requested = False  # a quit (or EOF) arrived during a window
        self._window_stopped = False
        self._thread = threading.Thread(target=self._read, name="commands", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def next(self) -> str:
        """Block until the next command; "quit" after EOF."""
        if self.quit_requested:
            return "quit"
        return self._queue.get()

    def begin_window(self) -> None:
        self._window_stopped = False

    @property
    def stop_requested(self) -> bool:
        """Whether the current window must end: a stop or quit arrived. Other commands are out of place here."""
        while not self._window_stopped:
            try:
                command = self._queue.get_nowait()
            except queue.Empty:
                break
            if command in ("stop", "quit"):
                self._window_stopped = True
                self.quit_requested = self.quit_requested or command == "quit"
            else:
                log(f"ignoring {command!r} during a measurement window")
        return self._window_stopped

    def _read(self) -> None:
        for line in command_lines(self._fd):
            self._handle(line)
        self._queue.put("quit")

    def _handle(self, raw: bytes) -> None:
        command = raw.decode("utf-8", "replace").strip()
        if command in self.COMMANDS:
            self._queue.put(command)
        elif command:
            log(f"ignoring unknown command {command!r}")


def log(message: str) -> None:
    """Human-readable diagnostics go to stderr, never stdout."""
    print(f"sharebench: {message}", file=sys.stderr, flush=True)


def ms(ns: int) -> float:
    """Nanoseconds to milliseconds, unrounded: step_ms is exactly (t1_ns - t0_ns) / 1e6."""
    return ns / 1e6


# ---------------------------------------------------------------------------------------------------------------
# Sessions: what actually runs a step. TorchSession lives in torch_session.py.


class DrySession:
    """A stand-in for training that never imports torch.

    Each micro-step sleeps a synthetic, seeded time, so the timestamps in the stream are real monotonic times and
    the parent can exercise barriers and overlap windows. Memory figures are synthetic too (``mem_source``
    "dry-run"). A job of several ranks runs as rank 0 alone.
    """

    mem_source = "dry-run"
    ranks = None

    def __init__(self, cfg: Config):
        self._cfg = cfg
        self._rng = random.Random(cfg.seed)
        self._micro_s = (DRY_MICRO_BASE_MS + DRY_MICRO_PER_SAMPLE_MS * cfg.sub_batch) / 1e3

    def start_fields(self) -> dict:
        return {
            "impl": "dry-run",
            "device": "cuda:0" if self._cfg.device == "cuda" else "cpu",
            "gpu": None,
            "torch": None, "torchvision": None, "transformers": None, "cuda": None, "cudnn": None,
            "precision": {"mode": self._cfg.precision, "note": "dry run: no math"},
            "timing": "wall",
        }

    def build(self) -> None:
        """Nothing to build."""

    def params(self) -> int:
        return 0

    def step(self) -> StepTiming:
        t0 = time.monotonic_ns()
        micro = []
        for _ in range(self._cfg.accum):
            start = time.monotonic_ns()
            time.sleep(self._micro_s * self._rng.uniform(1 - DRY_JITTER, 1 + DRY_JITTER))
            micro.append(time.monotonic_ns() - start)
        time.sleep(DRY_OPTIMIZER_MS / 1e3)
        return t0, time.monotonic_ns(), micro, None

    def reset_peaks(self) -> None:
        """Synthetic peaks do not change between phases."""

    def memory_peaks(self, read_device: bool = True) -> Tuple[int, int, Optional[int]]:
        allocated = DRY_MEM_BASE + DRY_MEM_PER_SAMPLE * self._cfg.sub_batch
        return allocated, allocated + allocated // 4, None

    def close(self) -> None:
        """Nothing to release."""

    @staticmethod
    def is_oom(exc: BaseException) -> bool:
        return isinstance(exc, SyntheticOOM)

    @staticmethod
    def synthetic_oom(phase: str) -> BaseException:
        return SyntheticOOM(f"CUDA out of memory. Tried to allocate 2.00 GiB (synthetic: --inject oom@{phase})")


# ---------------------------------------------------------------------------------------------------------------
# The run


def cpu_ranges(cpus) -> str:
    """CPU numbers as a compact list, e.g. "0-3,8"."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def cpu_affinity() -> Optional[str]:
    try:
        return cpu_ranges(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def start_event(cfg: Config, session) -> dict:
    """Fields of the start event: the configuration, then what the session reports about the host."""
    fields = {"run": cfg.run_id, "model": cfg.model}
    host = session.start_fields()
    fields["impl"] = host.pop("impl")
    fields.update(batch=cfg.batch, sub_batch=cfg.sub_batch, accum=cfg.accum, gpus=cfg.world_size)
    if cfg.seq_len is not None:
        fields["seq_len"] = cfg.seq_len
    if cfg.image_size is not None:
        fields["image_size"] = cfg.image_size
    if cfg.domain == "rl":
        fields.update(play_steps=cfg.play_steps, rollout_length=cfg.rollout_length)
    fields.update(amp=cfg.amp, tf32=cfg.tf32)
    fields.update(host)
    fields.update(
        python=platform.python_version(), pid=os.getpid(), threads=cfg.threads, seed=cfg.seed,
        tiny=cfg.tiny, h2d=cfg.h2d, mem_fraction=cfg.mem_fraction, dry_run=cfg.dry_run,
        cpu_affinity=cpu_affinity(), cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
    )
    return fields


def decide(session, value: int) -> int:
    """Rank 0's decision, on every rank of the job (just value for a single process)."""
    return value if session.ranks is None else session.ranks.decide(value)


def warm_up(session, cfg: Config) -> Tuple[int, float, Optional[float]]:
    """Run warm-up steps until both --warmup-steps and --warmup-seconds are reached (rank 0 decides).

    Returns the steps, the seconds and the median duration (ms) of the later half of the steps, which the first
    steps' autotuning and allocator growth do not inflate (None without steps): the runner sizes windows with it.
    """
    if cfg.inject.oom_in("warmup"):
        raise session.synthetic_oom("warmup")
    start = time.monotonic()
    durations = []
    while decide(session, int(len(durations) < cfg.warmup_steps or time.monotonic() - start < cfg.warmup_seconds)):
        t0, t1, _, _ = session.step()
        durations.append(ms(t1 - t0))
    later = sorted(durations[len(durations) // 2:])
    step_ms = None
    if later:
        mid = len(later) // 2
        step_ms = later[mid] if len(later) % 2 else (later[mid - 1] + later[mid]) / 2
    return len(durations), time.monotonic() - start, step_ms


def measure(session, cfg: Config, protocol: Protocol, commands) -> Tuple[int, str]:
    """Timed steps after go, until stop/EOF ("ok") or the step cap ("cap"). Returns (steps, exit)."""
    step = 0
    while True:
        if cfg.max_steps and step >= cfg.max_steps:
            reason = "cap"
        elif commands.stop_requested:
            reason = "ok"
        else:
            reason = ""
        if not decide(session, int(reason == "")):
            return step, reason or "ok"
        if cfg.inject.oom_in("measure"):
            raise session.synthetic_oom("measure")
        if cfg.inject.crash_at(step):
            raise InjectedCrash(f"injected crash at step {step} (--inject crash@{step})")
        t0, t1, micro, act = session.step()
        fields = dict(i=step, t0_ns=t0, t1_ns=t1, micro_ms=[ms(m) for m in micro], step_ms=ms(t1 - t0),
                      opt_ms=ms(t1 - t0 - sum(micro) - (act or 0)), samples=cfg.batch)
        if act is not None:
            fields["act_ms"] = ms(act)
        protocol.emit("step", **fields)
        step += 1


def hang_forever() -> None:
    """--inject hang: stop responding (and ignore stdin) until killed."""
    log("injected hang after ready")
    while True:
        time.sleep(3600)


class Phase:
    """The phase rank 0 is in, for the oom event a failed rank causes."""

    name = "build"


def run(session, cfg: Config, protocol: Protocol, commands, phase: Optional[Phase] = None,
        finish: Optional[Callable[[], int]] = None) -> int:
    """Drive one workload process through the protocol; returns the exit code. Ranks > 0 run the same steps
    with a silent protocol and follow rank 0's decisions. finish, when given, runs before "done" (rank 0 waits for
    the other ranks there); a non-zero code from it ends the run without "done"."""
    phase = phase or Phase()
    protocol.emit("start", **start_event(cfg, session))
    try:
        if cfg.inject.oom_in("build"):
            raise session.synthetic_oom("build")
        session.build()
        phase.name = "warmup"
        protocol.emit("ready", **warm_up_and_report(session, cfg))
        if cfg.inject.kind == "hang":
            hang_forever()
        commands.wait_for_go()
        phase.name = "measure"
        session.reset_peaks()
        steps, exit_reason = measure(session, cfg, protocol, commands)
        allocated, reserved, device = session.memory_peaks()
    except Exception as exc:  # noqa: BLE001 - everything that is not an OOM is re-raised
        if not session.is_oom(exc):
            raise
        traceback.print_exc(file=sys.stderr)
        protocol.emit("oom", phase=phase.name, msg=str(exc).strip()[:OOM_MESSAGE_LIMIT])
        return EXIT_OOM
    mem = dict(max_allocated=allocated, max_reserved=reserved, mem_source=session.mem_source)
    if device is not None:
        mem["mem_device_bytes"] = device
    protocol.emit("mem", **mem)
    if finish is not None:
        code = finish()
        if code != EXIT_OK:
            return code
    protocol.emit("done", steps=steps, exit=exit_reason)
    return EXIT_OK


def warm_up_and_report(session, cfg: Config) -> dict:
    """Warm up from fresh memory peaks and return the fields of the ready event."""
    session.reset_peaks()
    warmup_steps, warmup_s, step_ms = warm_up(session, cfg)
    allocated, reserved, device = session.memory_peaks()
    ready = dict(warmup_steps=warmup_steps, warmup_s=round(warmup_s, 6), mem_alloc_peak=allocated,
                 mem_reserved_peak=reserved, mem_source=session.mem_source, params=session.params())
    if step_ms is not None:
        ready["warmup_step_ms"] = step_ms
    if device is not None:
        ready["mem_device_bytes"] = device
    return ready


def serve(session, cfg: Config, protocol: Protocol, commands: ServeCommands) -> int:
    """Drive a warm worker (--serve): start, build once and report ``loaded``; then, on command, warm up (``ready``)
    or measure one window (``step`` events until stop or the step cap, then ``mem`` and ``idle``), as often as the
    runner asks, until ``quit`` or EOF (``done``). Each window counts its steps from 0 and resets the memory peaks,
    so it reads like the measurement of a fresh run. Injected failures fire in the first warm-up (oom@warmup, hang
    after its ready), the first window (oom@measure) or at step N of any window (crash@N)."""
    phase = Phase()
    protocol.emit("start", **start_event(cfg, session))
    total, windows, warmups = 0, 0, 0
    try:
        if cfg.inject.oom_in("build"):
            raise session.synthetic_oom("build")
        t0 = time.monotonic()
        session.build()
        protocol.emit("loaded", build_s=round(time.monotonic() - t0, 6), params=session.params())
        while True:
            command = commands.next()
            if command == "quit":
                break
            if command == "warmup":
                phase.name = "warmup"
                inject = cfg.inject if warmups == 0 else Injection()
                protocol.emit("ready", **warm_up_and_report(session, dataclasses.replace(cfg, inject=inject)))
                warmups += 1
                if inject.kind == "hang":
                    hang_forever()
            elif command == "go":
                phase.name = "measure"
                inject = cfg.inject if windows == 0 or cfg.inject.kind == "crash" else Injection()
                session.reset_peaks()
                commands.begin_window()
                steps, exit_reason = measure(session, dataclasses.replace(cfg, inject=inject), protocol, commands)
                # The driver's account (nvidia-smi, about a second) was read after the warm-up; reading it after
                # every window would add that second to every cell of a campaign.
                allocated, reserved, _ = session.memory_peaks(read_device=False)
                protocol.emit("mem", max_allocated=allocated, max_reserved=reserved, mem_source=session.mem_source)
                protocol.emit("idle", steps=steps, exit=exit_reason)
                total += steps
                windows += 1
                if commands.quit_requested:
                    break
            # A "stop" between windows is late (the window ended at its step cap): nothing to do.
    except Exception as exc:  # noqa: BLE001 - everything that is not an OOM is re-raised
        if not session.is_oom(exc):
            raise
        traceback.print_exc(file=sys.stderr)
        protocol.emit("oom", phase=phase.name, msg=str(exc).strip()[:OOM_MESSAGE_LIMIT])
        return EXIT_OOM
    protocol.emit("done", steps=total, exit="ok")
    return EXIT_OK


def make_session(cfg: Config, catalog_entry: dict):
    """DrySession, or a TorchSession (importing torch only now, after the thread settings are in place)."""
    if cfg.dry_run:
        return DrySession(cfg)
    # OpenMP reads its thread count when torch loads; torch.set_num_threads alone misses some pools.
    os.environ["OMP_NUM_THREADS"] = str(cfg.threads)
    os.environ["MKL_NUM_THREADS"] = str(cfg.threads)
    import torch_session  # noqa: PLC0415 - deliberately lazy: --dry-run must not import torch

    try:
        return torch_session.TorchSession(cfg, catalog_entry)
    except torch_session.SetupError as exc:
        # train.py runs as __main__, so torch_session cannot import this module's SetupError.
        raise SetupError(str(exc)) from exc


# ---------------------------------------------------------------------------------------------------------------
# Ranks of a multi-process job


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux), and exit now if it already has."""
    try:
        import ctypes  # noqa: PLC0415
        import signal  # noqa: PLC0415

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent_pid and os.getppid() != parent_pid:
        os._exit(EXIT_ERROR)


class Workers:
    """Ranks 1..n-1 of a job, started by rank 0 as children in its process group (so the runner's group kill
    reaches them) with the same flags; they die with rank 0. A watcher turns a rank that fails into rank 0's
    failure: an out-of-memory exit (code 3) becomes an oom event, anything else ends rank 0 with code 1."""

    def __init__(self, argv: List[str], cfg: Config, protocol: Protocol, phase: Phase):
        self.store_dir = tempfile.mkdtemp(prefix="sharebench-dist-")
        self.store = os.path.join(self.store_dir, "store")
        self._protocol, self._phase, self._done = protocol, phase, threading.Event()
        self.procs = []
        for rank in range(1, cfg.world_size):
            cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--rank", str(rank),
                   "--dist-store", self.store, "--parent-pid", str(os.getpid())]
            self.procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno()))
        self._watcher = threading.Thread(target=self._watch, name="ranks", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        while not self._done.wait(0.2):
            for rank, proc in enumerate(self.procs, start=1):
                code = proc.poll()
                if code is None or code == 0:
                    continue
                if code == EXIT_OOM:
                    self._protocol.emit("oom", phase=self._phase.name, msg=f"rank {rank}: out of memory (exit code 3)")
                    os._exit(EXIT_OOM)
                log(f"error: rank {rank} exited with code {code}")
                os._exit(EXIT_ERROR)

    def finish(self) -> int:
        """Wait for the ranks after a clean end; EXIT_ERROR if one failed or hung."""
        self._done.set()
        self._watcher.join()
        code = EXIT_OK
        for rank, proc in enumerate(self.procs, start=1):
            try:
                rc = proc.wait(WORKER_EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            if rc != 0:
                log(f"error: rank {rank} exited with code {rc}")
                code = EXIT_ERROR
        return code

    def cleanup(self) -> None:
        shutil.rmtree(self.store_dir, ignore_errors=True)


class NoCommands:
    """What ranks > 0 see instead of stdin: rank 0's decisions arrive by broadcast."""

    stop_requested = False

    def wait_for_go(self) -> None:
        """Rank 0 releases the measurement through its first decision."""


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    catalog = load_catalog()
    parser = build_parser(catalog)
    args = parser.parse_args(argv)
    try:
        cfg = resolve_config(args, catalog)
    except UsageError as exc:
        parser.error(str(exc))  # exits with EXIT_USAGE
    if cfg.rank > 0:
        die_with_parent(cfg.parent_pid)
        cfg = dataclasses.replace(cfg, inject=Injection())  # failures are injected into rank 0 only
        session = make_session(cfg, catalog[cfg.model])
        try:
            code = run(session, cfg, Protocol(None), NoCommands())
        finally:
            session.close()
        # The interpreter's teardown can hang in torch.distributed's threads after the group is
        # gone (about one run in five, gloo on CPU), and rank 0 waits for this process: a worker
        # rank has nothing left to release but its own streams.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    protocol = Protocol(claim_stdout())
    if cfg.serve:
        commands = ServeCommands(claim_stdin())
        commands.start()
        try:
            session = make_session(cfg, catalog[cfg.model])
        except SetupError as exc:
            log(f"error: {exc}")
            return EXIT_ERROR
        try:
            return serve(session, cfg, protocol, commands)
        finally:
            session.close()
    commands = Commands(claim_stdin())
    commands.start()  # from the start, so that a stop or EOF during warm-up is not lost
    phase = Phase()
    workers = None
    if cfg.world_size > 1 and not cfg.dry_run:
        workers = Workers(argv, cfg, protocol, phase)
        cfg = dataclasses.replace(cfg, dist_store=workers.store)
    try:
        try:
            session = make_session(cfg, catalog[cfg.model])
        except SetupError as exc:
            log(f"error: {exc}")
            return EXIT_ERROR
        try:
            return run(session, cfg, protocol, commands, phase, workers.finish if workers else None)
        finally:
            session.close()
    finally:
        if workers is not None:
            workers.cleanup()


if __name__ == "__main__":
    sys.exit(main())
