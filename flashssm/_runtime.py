"""Where an op runs, and how its outputs are allocated.

Triton kernels run on CUDA tensors, or on CPU tensors under the Triton interpreter
(`TRITON_INTERPRET=1`, which `@triton.jit` reads when a kernel is *defined*: set it before the
first kernel module is imported; flashssm imports its kernel modules lazily, on first use).
Everything else runs the plain-PyTorch reference beside the kernel.
"""

from __future__ import annotations

import contextlib
import functools
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


_force_reference = 0


@contextlib.contextmanager
def use_reference():
    """Run every op's plain-PyTorch reference inside the block, GPU or not (what `flashssm profile
    --kernels reference` measures). Not thread-safe; nests."""
    global _force_reference
    _force_reference += 1
    try:
        yield
    finally:
        _force_reference -= 1


# The kernels use bf16 tensor-core products, cp.async-era shared memory and acquire/release
# atomics: Ampere (compute capability 8.0) and newer. Triton compiles for older GPUs, but what it
# makes there is untested (and bf16 dots do not exist on them).
MIN_CAPABILITY = (8, 0)


# The name is asked for only when the GPU is refused: torch.compile traces this check, and a call
# returning a string (get_device_name) breaks a fullgraph trace.
@functools.lru_cache(maxsize=None)
def _cuda_capability(index: int) -> tuple[int, int]:
    return tuple(torch.cuda.get_device_capability(index))


def _cuda_name(index: int) -> str:
    return torch.cuda.get_device_name(index)


def gpu_blocker(device: torch.device) -> str | None:
    """Why the kernels do not run on this CUDA device (older than MIN_CAPABILITY), or None."""
    if torch.version.hip is not None:  # ROCm reports its own numbering; Triton targets it
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    capability = _cuda_capability(index)
    if capability < MIN_CAPABILITY:
        return (f"{_cuda_name(index)} has compute capability {capability[0]}.{capability[1]}; the Triton kernels need "
                f"{MIN_CAPABILITY[0]}.{MIN_CAPABILITY[1]} (Ampere) or newer")
    return None


@functools.lru_cache(maxsize=None)
def interpreter_blocker() -> str | None:
    """Why Triton's interpreter cannot run the kernels here, or None. Triton 3.6's interpreter turns
    a one-element array into an int in a way NumPy 2.4 refuses (fixed in Triton 3.7)."""
    import numpy
    import triton

    def version(text: str) -> tuple[int, int]:
        major, minor = text.split(".")[:2]
        return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)

    if version(triton.__version__) < (3, 7) and version(numpy.__version__) >= (2, 4):
        return (f"Triton {triton.__version__}'s interpreter does not run with NumPy {numpy.__version__} "
                f"(install numpy<2.4 or triton>=3.7)")
    return None


def device_blocker(x: torch.Tensor) -> str | None:
    """Why no Triton kernel runs on x's device and dtype, or None: no GPU and no interpreter, a GPU
    older than the kernels support, bf16 under the interpreter (its bf16 dot products are wrong and
    its fp32 -> bf16 rounding truncates), or use_reference() active."""
    if _force_reference:
        return "flashssm._runtime.use_reference() is active"
    if not kernel_device(x):
        return "no GPU and no Triton interpreter"
    if x.is_cuda:
        return gpu_blocker(x.device)
    if interpreter_blocker() is not None:  # x is on the CPU from here
        return interpreter_blocker()
    if x.dtype == torch.bfloat16:
        return "the Triton interpreter's bf16 is unreliable (wrong dot products, truncating rounding)"
    return None


def needs_grad(*tensors) -> bool:
    """Whether autograd would record a call on these tensors (None entries ignored)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


@functools.lru_cache(maxsize=None)
def _cuda_sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def sm_count(device: torch.device, *, on_cpu: int) -> int:
    """The GPU's SM count (cached), or `on_cpu` under the interpreter, where the caller decides what
    a grid should be sized for."""
    if device.type != "cuda":
        return on_cpu
    return _cuda_sm_count(device.index if device.index is not None else torch.cuda.current_device())


def cdiv(a: int, b: int) -> int:
    """triton.cdiv for host code: in Triton 3.4 and later that one is a constexpr function whose
    wrapper costs microseconds a call, and a small launch is bound by its host path."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """triton.next_power_of_2 for host code (same values: 0 for 0, 1 for 1); see `cdiv`."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def poison_outputs() -> bool:
    """Tests set FLASHSSM_POISON_OUTPUTS=1 so that any output element a kernel fails to write is NaN."""
    return os.environ.get(_POISON_ENV, "0") == "1"


def _poisoned(out: torch.Tensor) -> torch.Tensor:
    if poison_outputs() and out.is_floating_point():
        out.fill_(float("nan"))
    return out


def empty(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """torch.empty for kernel outputs: NaN-filled when poisoning is on, so unwritten elements show."""
    return _poisoned(torch.empty(shape, dtype=dtype, device=device))


def empty_like(x: torch.Tensor) -> torch.Tensor:
    """`empty` with x's shape, dtype and memory layout (x's strides when x is dense, else contiguous)."""
    return _poisoned(torch.empty_like(x))


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
