"""The torch side of ``train.py``: device setup, the gradient-accumulation step, memory readings, ranks.

Written against both torch 1.13 (Debian 12's CPU build, used in CI) and torch 2.x on GPU hosts: no API that
either release lacks is called unguarded, and every ``torch.cuda`` call sits behind the device check.
"""

import contextlib
import datetime
import importlib.metadata
import os
import random
import resource
import subprocess
import sys
import time
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

import models

# (t0_ns, t1_ns, per-micro-step ns, acting ns or None), as train.StepTiming.
StepTiming = Tuple[int, int, List[int], Optional[int]]

# torch >= 1.13 raises torch.cuda.OutOfMemoryError for the caching allocator; older releases a RuntimeError.
CUDA_OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
# Allocation failures that surface as a plain RuntimeError: the allocator's text, and the libraries that allocate
# their handles and workspaces lazily inside the first matmul, convolution or collective (cuBLAS, cuDNN, NCCL's
# "Cuda failure 'out of memory'", the CUDA runtime's error name).
OOM_TEXTS = (
    "out of memory", "CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED", "cudaErrorMemoryAllocation",
    "CUFFT_ALLOC_FAILED", "CUSOLVER_STATUS_ALLOC_FAILED", "CUSPARSE_STATUS_ALLOC_FAILED",
)
PRECISIONS = ("default", "strict-fp32", "tf32")
DIST_TIMEOUT = datetime.timedelta(hours=2)  # the runner's own timeouts end a hung job long before


class SetupError(Exception):
    """The host cannot run the requested configuration; train.py exits with code 1."""


def package_version(name: str) -> Optional[str]:
    """Version of an installed distribution without importing it (importing transformers takes seconds)."""
    module = sys.modules.get(name)
    if module is not None and hasattr(module, "__version__"):
        return str(module.__version__)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cudnn_version() -> Optional[str]:
    """cuDNN version as "major.minor.patch" (cuDNN encodes it as M*1000+m*100+p before 9, M*10000+m*100+p from 9)."""
    if not torch.backends.cudnn.is_available():
        return None
    v = torch.backends.cudnn.version()
    if v is None:
        return None
    major, rest = (v // 10000, v % 10000) if v >= 10000 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def set_tf32(enabled: bool) -> None:
    """Allow or forbid TF32 in matmuls and cuDNN convolutions.

    torch >= 2.9 has per-backend ``fp32_precision`` settings and deprecates ``allow_tf32``; mixing the two APIs
    is an error there, so use the new one whenever it exists.
    """
    if hasattr(torch.backends.cudnn, "conv"):
        mode = "tf32" if enabled else "ieee"
        torch.backends.cuda.matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
    else:
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled


def apply_precision(mode: str) -> None:
    """``default`` leaves PyTorch's own settings (cuDNN convolutions may use TF32, matmuls do not);
    ``strict-fp32`` forbids TF32 everywhere; ``tf32`` allows it everywhere."""
    if mode not in PRECISIONS:
        raise SetupError(f"--precision {mode!r}: want one of {', '.join(PRECISIONS)}")
    if mode != "default":
        set_tf32(mode == "tf32")


def _read(getter):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getter()
    except Exception:  # noqa: BLE001 - a setting this release lacks is reported as unknown
        return None


def precision_report(mode: str, cuda: bool) -> dict:
    """The FP32 math in effect, as the flags read back (recorded in the start event and the manifest)."""
    report = {
        "mode": mode,
        "matmul_tf32": _read(lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
        "conv_tf32": _read(lambda: bool(torch.backends.cudnn.allow_tf32)),
        "float32_matmul_precision": _read(torch.get_float32_matmul_precision),
    }
    new_api = {
        "matmul": _read(lambda: torch.backends.cuda.matmul.fp32_precision),
        "conv": _read(lambda: torch.backends.cudnn.conv.fp32_precision),
    }
    if any(v is not None for v in new_api.values()):
        report["fp32_precision"] = new_api
        # With the per-backend API, its value decides; "none" defers to the legacy flag.
        for key, value in (("matmul_tf32", new_api["matmul"]), ("conv_tf32", new_api["conv"])):
            if value in ("tf32", "ieee"):
                report[key] = value == "tf32"
    if not cuda:
        report["note"] = "CPU: TF32 applies to CUDA devices only; math is FP32"
    return report


def host_peak_rss() -> int:
    """Peak resident set size since the last reset_host_peak (VmHWM), else since the start (ru_maxrss)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def reset_host_peak() -> None:
    """Reset VmHWM to the current RSS (Linux: "5" to /proc/self/clear_refs); a no-op elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def device_memory_bytes(pid: int) -> Optional[int]:
    """GPU memory the driver accounts to process pid (CUDA context included), from nvidia-smi; None when nvidia-smi
    is missing or does not list the process (inside a container its PIDs differ)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    for line in out.stdout.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0] == str(pid) and fields[1].isdigit():
            return int(fields[1]) << 20  # MiB
    return None


def is_oom(exc: BaseException) -> bool:
    """True for an allocation failure of any kind, on old and new torch alike, also when it is the cause or context
    of another exception: the caching allocator's OutOfMemoryError, host MemoryError, and the RuntimeErrors of the
    libraries in OOM_TEXTS."""
    seen = 0
    while exc is not None and seen < 8:
        if CUDA_OOM is not RuntimeError and isinstance(exc, CUDA_OOM):
            return True
        if isinstance(exc, MemoryError):
            return True
        if isinstance(exc, RuntimeError) and any(text in str(exc) for text in OOM_TEXTS):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def is_distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def wrap_distributed(model: nn.Module, device: torch.device) -> nn.Module:
    """Wrap in DistributedDataParallel when a process group exists (multi-GPU jobs); otherwise unchanged."""
    if not is_distributed():
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids)


class WallClock:
    """Micro-step boundaries from the host clock: exact on CPU, where every operation is synchronous."""

    def __init__(self):
        self._marks: List[int] = []

    def begin(self) -> None:
        self._marks.clear()

    def mark(self) -> None:
        self._marks.append(time.monotonic_ns())

    def finish(self) -> None:
        """Nothing is queued on a CPU."""

    def intervals(self) -> List[int]:
        return [b - a for a, b in zip(self._marks, self._marks[1:])]


class CudaClock:
    """Micro-step boundaries as CUDA events on the device's stream, read after the step's one synchronisation.

    Synchronising after every micro-step would hand the GPU to a co-runner at every drain, which real gradient
    accumulation never does; events time the micro-steps without stopping the queue.
    """

    def __init__(self, device: torch.device):
        self._device = device
        self._events: List = []
        self._used = 0

    def begin(self) -> None:
        self._used = 0

    def mark(self) -> None:
        if self._used == len(self._events):
            self._events.append(torch.cuda.Event(enable_timing=True))
        self._events[self._used].record()
        self._used += 1

    def finish(self) -> None:
        torch.cuda.synchronize(self._device)

    def intervals(self) -> List[int]:
        ev = self._events[:self._used]
        return [int(round(a.elapsed_time(b) * 1e6)) for a, b in zip(ev, ev[1:])]


def accumulation_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    micro_batches: Sequence[Callable[[], Dict[str, torch.Tensor]]],
    loss_fn: Callable[[nn.Module, Dict[str, torch.Tensor]], torch.Tensor],
    autocast: Callable[[], contextlib.AbstractContextManager],
    clock,
    act: Optional[Callable[[], None]] = None,
) -> StepTiming:
    """One optimizer step = [acting +] k micro-steps (forward + backward, loss scaled by 1/k) + step + zero_grad.

    The step ends with the clock's one synchronisation, so its wall time (t0_ns, t1_ns) is the time the work
    took; micro-step times come from the clock's marks. Under DDP the first k-1 micro-steps run inside
    ``no_sync()`` so that gradients are all-reduced once per optimizer step. Returns (t0_ns, t1_ns,
    per-micro-step ns, acting ns or None).
    """
    k = len(micro_batches)
    ddp = isinstance(model, nn.parallel.DistributedDataParallel)
    t0 = time.monotonic_ns()
    clock.begin()
    clock.mark()
    if act is not None:
        act()
        clock.mark()
    for j, get_batch in enumerate(micro_batches):
        # no_sync must cover the forward pass as well as the backward pass.
        sync_ctx = model.no_sync() if ddp and j < k - 1 else contextlib.nullcontext()
        with sync_ctx:
            batch = get_batch()
            with autocast():
                loss = loss_fn(model, batch)
            (loss / k).backward()
            # Release the autograd graph now rather than at function exit, so that its (sizeable) teardown
            # counts in the micro-step instead of falling between two timed steps.
            del loss, batch
        clock.mark()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    clock.finish()
    t1 = time.monotonic_ns()
    spans = clock.intervals()
    act_ns = spans.pop(0) if act is not None else None
    return t0, t1, spans, act_ns


class Ranks:
    """The processes of a job on several GPUs (or several CPU processes): one torch.distributed process group.

    Rank 0 speaks the protocol; every decision it takes (warm up once more, start, stop) reaches the other ranks
    through a broadcast on a gloo group, whose wait costs no GPU time (an NCCL broadcast would spin on the GPU
    while rank 0 waits for "go", slowing a co-runner's warm-up).
    """

    def __init__(self, rank: int, world_size: int, store: str, cuda: bool):
        import torch.distributed as dist  # noqa: PLC0415

        if not dist.is_available():
            raise SetupError("torch.distributed is not available in this torch build")
        self.rank, self.world_size = rank, world_size
        self._dist = dist
        backend = "nccl" if cuda else "gloo"
        dist.init_process_group(backend, init_method="file://" + store, rank=rank, world_size=world_size,
                                timeout=DIST_TIMEOUT)
        self.backend = backend
        self._ctl = dist.new_group(backend="gloo", timeout=DIST_TIMEOUT) if cuda else None

    def decide(self, value: int = 0) -> int:
        """Rank 0's value, on every rank."""
        t = torch.tensor([value], dtype=torch.int64)
        self._dist.broadcast(t, 0, group=self._ctl)
        return int(t.item())

    def max(self, values: Sequence[int]) -> List[int]:
        """The element-wise maximum over ranks."""
        t = torch.tensor(list(values), dtype=torch.int64)
        self._dist.all_reduce(t, op=self._dist.ReduceOp.MAX, group=self._ctl)
        return [int(x) for x in t.tolist()]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._dist.destroy_process_group()


class TorchSession:
    """Builds and trains the real model (see train.DrySession for the interface)."""

    def __init__(self, cfg, catalog_entry: dict):
        self._cfg = cfg
        torch.set_num_threads(cfg.threads)
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)  # seeds the CPU and every CUDA generator

        if cfg.device == "cuda":
            if not torch.cuda.is_available():
                raise SetupError("--device cuda, but torch sees no CUDA device (try --device cpu)")
            if torch.cuda.device_count() < cfg.world_size:
                raise SetupError(f"--gpus {cfg.world_size}, but torch sees {torch.cuda.device_count()} CUDA device(s) "
                                 f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r})")
            index = cfg.rank if cfg.world_size > 1 else torch.cuda.current_device()
            torch.cuda.set_device(index)
            self.device = torch.device("cuda", index)
            if cfg.mem_fraction is not None:
                torch.cuda.set_per_process_memory_fraction(cfg.mem_fraction, self.device)
            self.mem_source = "cuda"
        else:
            self.device = torch.device("cpu")
            if cfg.mem_fraction is not None:
                print("sharebench: --mem-fraction has no effect on CPU", file=sys.stderr)
            self.mem_source = "rss"
        self._cuda = self.device.type == "cuda"

        # cudnn.benchmark autotunes convolutions during warm-up; it only exists on CUDA.
        torch.backends.cudnn.benchmark = self._cuda
        apply_precision(cfg.precision)
        self.precision = precision_report(cfg.precision, self._cuda)

        try:
            self.impl = models.resolve_impl(cfg.model, cfg.impl, cfg.impls)
        except models.UnavailableImplementation as exc:
            raise SetupError(str(exc)) from exc

        self.ranks: Optional[Ranks] = None
        if cfg.world_size > 1:
            self.ranks = Ranks(cfg.rank, cfg.world_size, cfg.dist_store, self._cuda)

        self._model: Optional[nn.Module] = None
        self._optimizer = None
        self._loss = None
        self._act: Optional[Callable[[], None]] = None
        self._micro_batches: List[Callable[[], Dict[str, torch.Tensor]]] = []
        self._clock = CudaClock(self.device) if self._cuda else WallClock()

    def start_fields(self) -> dict:
        return {
            "impl": self.impl,
            "device": str(self.device),
            "gpu": torch.cuda.get_device_name(self.device) if self._cuda else None,
            "torch": torch.__version__,
            "torchvision": package_version("torchvision"),
            "transformers": package_version("transformers"),
            "cuda": torch.version.cuda,
            "cudnn": cudnn_version() if self._cuda else None,
            "cudnn_benchmark": self._cuda,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
            "precision": self.precision,
            "timing": "cuda-events" if self._cuda else "wall",
            "dist_backend": self.ranks.backend if self.ranks else None,
        }

    def build(self) -> None:
        """Model, optimizer and the synthetic global batch, all on the device."""
        cfg = self._cfg
        workload = models.build(cfg.model, self.impl, image_size=cfg.image_size, seq_len=cfg.seq_len,
                                tiny=cfg.tiny, play_steps=cfg.play_steps, rollout_length=cfg.rollout_length)
        model = workload.model.to(self.device)
        model.train()
        self._model = wrap_distributed(model, self.device)
        self._optimizer = workload.make_optimizer(self._model.parameters())
        self._loss = workload.loss
        self._micro_batches, data = self._make_micro_batches(workload)
        if workload.act is not None:
            act, net = workload.act, self._model
            self._act = lambda: act(net, data)

    def _make_micro_batches(self, workload: models.Workload):
        """One global batch, created once and split into k views of b samples.

        Normally the data live on the device, so no host-to-device copy enters the step. With --h2d they live in
        pinned host memory and each micro-step copies its slice, as a data loader would.
        """
        cfg = self._cfg
        host_side = cfg.h2d and self._cuda
        data = workload.make_batch(cfg.batch, torch.device("cpu") if host_side else self.device)
        if host_side:
            data = {name: t.pin_memory() for name, t in data.items()}
        getters = []
        for j in range(cfg.accum):
            part = workload.micro_batch(data, j, cfg.sub_batch)
            if host_side:
                getters.append(lambda part=part: {n: t.to(self.device, non_blocking=True) for n, t in part.items()})
            else:
                getters.append(lambda part=part: part)
        return getters, data

    def params(self) -> int:
        """Trainable parameters (a DQN's frozen target network does not count)."""
        return sum(p.numel() for p in self._model.parameters() if p.requires_grad)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self._cfg.amp == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step(self) -> StepTiming:
        return accumulation_step(self._model, self._optimizer, self._micro_batches, self._loss,
                                 self._autocast, self._clock, self._act)

    def reset_peaks(self) -> None:
        """Start a new memory phase: the peaks reported next cover only what runs from now on."""
        if self._cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            reset_host_peak()

    def memory_peaks(self, read_device: bool = True) -> Tuple[int, int, Optional[int]]:
        """(allocated, reserved, device) of the phase: the CUDA caching allocator's peaks and the driver's account of
        this process (context included; None when unknown or not read_device), or the RSS peak twice and None on CPU.
        With several ranks, the largest over the ranks (a collective: every rank must call it)."""
        if self._cuda:
            dev = device_memory_bytes(os.getpid()) if read_device else None
            peaks = [torch.cuda.max_memory_allocated(self.device), torch.cuda.max_memory_reserved(self.device),
                     -1 if dev is None else dev]
        else:
            rss = host_peak_rss()
            peaks = [rss, rss, -1]
        if self.ranks is not None:
            peaks = self.ranks.max(peaks)
        return peaks[0], peaks[1], None if peaks[2] < 0 else peaks[2]

    def close(self) -> None:
        if self.ranks is not None:
            self.ranks.close()

    @staticmethod
    def is_oom(exc: BaseException) -> bool:
        return is_oom(exc)

    @staticmethod
    def synthetic_oom(phase: str) -> BaseException:
        """An OOM error of the same type a real one has, so it takes the same handler."""
        return CUDA_OOM(f"CUDA out of memory. Tried to allocate 2.00 GiB (synthetic: --inject oom@{phase})")
