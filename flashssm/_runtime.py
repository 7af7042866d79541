"""Where an op runs, and how its outputs are allocated.

Triton kernels run on CUDA tensors, or on CPU tensors under the Triton interpreter
(`TRITON_INTERPRET=1`, which `@triton.jit` reads when a kernel is *defined*: set it before the
first kernel module is imported; flashssm imports its kernel modules lazily, on first use).
Everything else runs the plain-PyTorch reference beside the kernel.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import torch

_POISON_ENV = "FLASHSSM_POISON_OUTPUTS"
_warned: set[str] = set()


def interpreter_enabled() -> bool:
    """True when Triton kernels run under the CPU interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def kernel_device(t: torch.Tensor) -> bool:
    """True when a Triton kernel can run on `t`'s device (CUDA, or the CPU through the interpreter)."""
    return t.is_cuda or (t.device.type == "cpu" and interpreter_enabled())


def poison_outputs() -> bool:
    """Tests set FLASHSSM_POISON_OUTPUTS=1 so that any output element a kernel fails to write is NaN."""
    return os.environ.get(_POISON_ENV, "0") == "1"


def empty(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """torch.empty for kernel outputs: NaN-filled when poisoning is on, so unwritten elements show."""
    out = torch.empty(shape, dtype=dtype, device=device)
    if poison_outputs() and out.is_floating_point():
        out.fill_(float("nan"))
    return out


def warn_reference_fallback(op: str, why: str) -> None:
    """Say once per op and reason that a CUDA call runs the slow PyTorch reference."""
    key = f"{op}:{why}"
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(
        f"flashssm.{op}: {why}; running the plain-PyTorch reference, which is correct but slow",
        RuntimeWarning,
        stacklevel=3,
    )


def on_device(device: torch.device):
    """Triton launches on the current CUDA device: a context that makes it `device` for the launch."""
    if device.type == "cuda" and device.index is not None and device.index != torch.cuda.current_device():
        return torch.cuda.device(device)
    return contextlib.nullcontext()
