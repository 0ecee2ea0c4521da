"""The torch side of ``train.py``: device setup, the gradient-accumulation step and memory readings.

Written against both torch 1.13 (Debian 12's CPU build, used in CI) and torch 2.x on GPU hosts: no API that
either release lacks is called unguarded, and every ``torch.cuda`` call sits behind the device check.
"""

import contextlib
import importlib.metadata
import os
import random
import resource
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

import models

# (t0_ns, t1_ns, per-micro-step ns), as train.StepTiming.
StepTiming = Tuple[int, int, List[int]]

# torch >= 1.13 raises torch.cuda.OutOfMemoryError; older releases a RuntimeError whose message says so.
CUDA_OOM = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
OOM_TEXT = "out of memory"


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
    is an error there, so use the new one whenever it exists. Note that cuDNN's legacy flag defaults to on,
    which is why it is always set explicitly.
    """
    if hasattr(torch.backends.cudnn, "conv"):
        mode = "tf32" if enabled else "ieee"
        torch.backends.cuda.matmul.fp32_precision = mode
        torch.backends.cudnn.conv.fp32_precision = mode
    else:
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled


def rss_peak_bytes() -> int:
    """Peak resident set size of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def is_cuda_oom(exc: BaseException) -> bool:
    """True for a CUDA out-of-memory error on old and new torch alike."""
    if CUDA_OOM is not RuntimeError and isinstance(exc, CUDA_OOM):
        return True
    return isinstance(exc, RuntimeError) and OOM_TEXT in str(exc)


def is_distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def wrap_distributed(model: nn.Module, device: torch.device) -> nn.Module:
    """Wrap in DistributedDataParallel when a process group exists (multi-GPU jobs); otherwise unchanged."""
    if not is_distributed():
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=device_ids)


def accumulation_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    micro_batches: Sequence[Callable[[], Dict[str, torch.Tensor]]],
    loss_fn: Callable[[nn.Module, Dict[str, torch.Tensor]], torch.Tensor],
    autocast: Callable[[], contextlib.AbstractContextManager],
    synchronize: Callable[[], None],
) -> StepTiming:
    """One optimizer step = k micro-steps (forward + backward, loss scaled by 1/k) + step + zero_grad.

    Each micro-step ends with a device synchronisation so its wall time is meaningful; the step's end is
    synchronised too. Under DDP the first k-1 micro-steps run inside ``no_sync()`` so that gradients are
    all-reduced once per optimizer step. Returns (t0_ns, t1_ns, per-micro-step ns).
    """
    k = len(micro_batches)
    ddp = isinstance(model, nn.parallel.DistributedDataParallel)
    micro_ns: List[int] = []
    t0 = time.monotonic_ns()
    for j, get_batch in enumerate(micro_batches):
        start = time.monotonic_ns()
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
        synchronize()
        micro_ns.append(time.monotonic_ns() - start)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    synchronize()
    return t0, time.monotonic_ns(), micro_ns


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
            self.device = torch.device("cuda", torch.cuda.current_device())
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
        set_tf32(cfg.tf32)

        try:
            self.impl = models.resolve_impl(cfg.model, cfg.impl, cfg.impls)
        except models.UnavailableImplementation as exc:
            raise SetupError(str(exc)) from exc

        self._model: Optional[nn.Module] = None
        self._optimizer = None
        self._loss = None
        self._micro_batches: List[Callable[[], Dict[str, torch.Tensor]]] = []

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
        }

    def build(self) -> None:
        """Model, optimizer and the synthetic global batch, all on the device."""
        cfg = self._cfg
        workload = models.build(cfg.model, self.impl, image_size=cfg.image_size, seq_len=cfg.seq_len,
                                tiny=cfg.tiny)
        model = workload.model.to(self.device)
        model.train()
        self._model = wrap_distributed(model, self.device)
        self._optimizer = workload.make_optimizer(self._model.parameters())
        self._loss = workload.loss
        self._micro_batches = self._make_micro_batches(workload)

    def _make_micro_batches(self, workload: models.Workload) -> List[Callable[[], Dict[str, torch.Tensor]]]:
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
            part = {name: t[j * cfg.sub_batch:(j + 1) * cfg.sub_batch] for name, t in data.items()}
            if host_side:
                getters.append(lambda part=part: {n: t.to(self.device, non_blocking=True) for n, t in part.items()})
            else:
                getters.append(lambda part=part: part)
        return getters

    def params(self) -> int:
        return sum(p.numel() for p in self._model.parameters())

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self._cfg.amp == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _synchronize(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def step(self) -> StepTiming:
        return accumulation_step(self._model, self._optimizer, self._micro_batches, self._loss,
                                 self._autocast, self._synchronize)

    def memory_peaks(self) -> Tuple[int, int]:
        """(allocated, reserved) peaks: the CUDA caching allocator's, or the process RSS peak twice on CPU."""
        if self._cuda:
            return torch.cuda.max_memory_allocated(self.device), torch.cuda.max_memory_reserved(self.device)
        rss = rss_peak_bytes()
        return rss, rss

    @staticmethod
    def is_oom(exc: BaseException) -> bool:
        return is_cuda_oom(exc)

    @staticmethod
    def synthetic_oom(phase: str) -> BaseException:
        """An OOM error of the same type a real one has, so it takes the same handler."""
        return CUDA_OOM(f"CUDA out of memory. Tried to allocate 2.00 GiB (synthetic: --inject oom@{phase})")
