"""Where an op runs, and how its outputs are allocated.

Triton kernels run on CUDA tensors, or on CPU tensors under the Triton interpreter
(`TRITON_INTERPRET=1`, which `@triton.jit` reads when a kernel is *defined*: set it before the
first kernel module is imported; flashssm imports its kernel modules lazily, on first use).
Everything else runs the plain-PyTorch reference beside the kernel.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import operator
import os
import queue
import sys
import threading
import warnings
import weakref

import torch
from torch.overrides import TorchFunctionMode

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


def cached(maxsize: int | None = 128):
    """functools.lru_cache for a pure helper of the host path that torch.compile traces (device queries, launch
    configuration tables): while Dynamo traces, the function itself, which is what Dynamo makes of an lru_cache wrapper
    anyway, but without its warning about one (once for each helper: eight on a Mamba-2 layer's compile on the GPU);
    otherwise the cache, a call about 50 ns more than lru_cache's own. cache_clear and cache_info as lru_cache's."""
    tracing = getattr(torch.compiler, "is_dynamo_compiling", None) or torch.compiler.is_compiling

    def decorate(fn):
        cache = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if tracing():
                return fn(*args, **kwargs)
            return cache(*args, **kwargs)

        call.cache_clear = cache.cache_clear
        call.cache_info = cache.cache_info
        return call

    return decorate


# The kernels use bf16 tensor-core products, cp.async-era shared memory and acquire/release
# atomics: Ampere (compute capability 8.0) and newer. Triton compiles for older GPUs, but what it
# makes there is untested (and bf16 dots do not exist on them).
MIN_CAPABILITY = (8, 0)


# The name is asked for only when the GPU is refused: torch.compile traces this check, and a call
# returning a string (get_device_name) breaks a fullgraph trace.
@cached(maxsize=None)
def cuda_capability(index: int | None) -> tuple[int, int]:
    """GPU `index`'s compute capability (None: the current GPU), cached."""
    return tuple(torch.cuda.get_device_capability(index))


def _cuda_name(index: int) -> str:
    return torch.cuda.get_device_name(index)


def gpu_blocker(device: torch.device) -> str | None:
    """Why the kernels do not run on this CUDA device (older than MIN_CAPABILITY, or an AMD GPU under ROCm), or None.
    ROCm: the kernels were written for NVIDIA GPUs and never run on an AMD one; some carry NVIDIA PTX (the forward's L2
    prefetch: compiled for gfx942 by Triton 3.9, LLVM rejects its operand constraint), and their hand-overs between
    programs were checked against NVIDIA's memory model only. Rather than an untested answer, the reference."""
    if torch.version.hip is not None:
        return ("an AMD GPU (ROCm): flashssm's Triton kernels are written for and tested on NVIDIA GPUs only (some "
                "carry NVIDIA PTX)")
    index = device.index if device.index is not None else torch.cuda.current_device()
    capability = cuda_capability(index)
    if capability < MIN_CAPABILITY:
        return (f"{_cuda_name(index)} has compute capability {capability[0]}.{capability[1]}; the Triton kernels need "
                f"{MIN_CAPABILITY[0]}.{MIN_CAPABILITY[1]} (Ampere) or newer")
    return None


@cached(maxsize=None)
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


@cached(maxsize=None)
def _cuda_sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


@cached(maxsize=None)
def _cuda_shared_memory(index: int) -> int:
    props = torch.cuda.get_device_properties(index)
    # (a torch without the field: 99 KB, the least of today's GPUs with an opt-in)
    return int(getattr(props, "shared_memory_per_block_optin", 0) or 99 * 1024)


def _gpu_index(device: torch.device) -> int | None:
    """The GPU whose properties size a launch on `device`: its own, a meta dry run's planned one, else None (the
    interpreter)."""
    if device.type != "cuda":
        planned = _planning_device() if device.type == "meta" else None
        return None if planned is None else planned.index
    return device.index if device.index is not None else torch.cuda.current_device()


def sm_count(device: torch.device, *, on_cpu: int) -> int:
    """The GPU's SM count (cached), or `on_cpu` under the interpreter, where the caller decides what
    a grid should be sized for."""
    index = _gpu_index(device)
    return on_cpu if index is None else _cuda_sm_count(index)


def shared_memory(device: torch.device, *, on_cpu: int) -> int:
    """The shared memory one block may opt in to on the GPU (cached; 227 KB on Hopper, 99 KB on Ada), or `on_cpu`
    under the interpreter."""
    index = _gpu_index(device)
    return on_cpu if index is None else _cuda_shared_memory(index)


def cuda_index(t: torch.Tensor) -> int:
    """The index of the GPU a kernel launched on t (`gpu_code`) compiles for."""
    if t.is_meta:
        return _planning_device().index
    return t.device.index if t.device.index is not None else torch.cuda.current_device()


def gpu_code(t: torch.Tensor) -> bool:
    """Whether a kernel launched on t compiles for the GPU: t on CUDA, or a meta tensor of `plan_ahead`'s dry run.
    (The wrappers' GPU-only constexprs and launch options, FAST or maxnreg, ask this rather than t.is_cuda.)"""
    return t.is_cuda or (t.is_meta and _planning_device() is not None)


def resident_warps(regs: int, warps_per_program: int = 1) -> int:
    """Warps of `warps_per_program`-warp programs that fit one SM by registers (Ampere and Hopper: the 64K
    registers are split between four schedulers, 16K each, allocated in steps of 8 registers a thread),
    whatever else limits them."""
    per_scheduler = 16384 // (max(8, cdiv(regs, 8) * 8) * 32)
    return 4 * per_scheduler // warps_per_program * warps_per_program


def cdiv(a: int, b: int) -> int:
    """triton.cdiv for host code: in Triton 3.4 and later that one is a constexpr function whose
    wrapper costs microseconds a call, and a small launch is bound by its host path."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """triton.next_power_of_2 for host code (same values: 0 for 0, 1 for 1); see `cdiv`."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def poison_outputs() -> bool:
    """Tests set FLASHSSM_POISON_OUTPUTS=1 so that any output element a kernel fails to write is NaN. Read once, when
    this module is imported (the test setup sets it before): every kernel output asks, and an environment lookup a
    buffer was ~1 us of a small call's host time each (eleven a 1x8K training call)."""
    return _POISON


_POISON = os.environ.get(_POISON_ENV, "0") == "1"


def _poisoned(out: torch.Tensor) -> torch.Tensor:
    # Not while torch.compile traces: with the in-place fill before a traced Triton launch that writes the buffer,
    # the compiled backward of the autograd.Functions (causal_conv1d, rmsnorm_gated) returned all-zero gradients on the
    # GPU (torch 2.11, Inductor; benchmarks/check_compiled_grads.py --functions, forty-second session); without the
    # fill they equal eager's. The compiled paths are tested against eager runs, which keep the poisoning.
    if poison_outputs() and out.is_floating_point() and not torch.compiler.is_compiling():
        out.fill_(float("nan"))
    return out


# Kernel buffers allocated without the deterministic mode's fill (False: with it, for A/B runs).
UNFILLED_BUFFERS = True


def _unfilled(alloc, *args, **kwargs):
    """alloc(*args, **kwargs) without the deterministic mode's fill. Under torch.use_deterministic_algorithms(True)
    every torch.empty is filled with NaN (torch.utils.deterministic.fill_uninitialized_memory), one full write of it;
    for a buffer that a kernel writes whole before anything reads it, the fill cannot change a result. On an H100 the
    fills were 0.4 ms of a 4.8 ms deterministic training call at 8x4K of the 2.7B shape (~1.2 GB written;
    notes/ssd_backward.md, nineteenth session). The switch is torch's global one, turned back on after the
    allocation (also if it raises); another thread allocating in that window gets no fill either."""
    if (UNFILLED_BUFFERS and torch.are_deterministic_algorithms_enabled()
            and torch.utils.deterministic.fill_uninitialized_memory):
        torch.utils.deterministic.fill_uninitialized_memory = False
        try:
            return alloc(*args, **kwargs)
        finally:
            torch.utils.deterministic.fill_uninitialized_memory = True
    return alloc(*args, **kwargs)


def buffer(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """torch.empty for a kernel's scratch or output that the kernel writes before anything reads it (no
    deterministic-mode fill: `_unfilled`)."""
    if _recorder is not None:
        return _recorder.make(buffer, (shape, dtype, device), _buffer)
    return _buffer(shape, dtype, device)


def _buffer(shape, dtype: torch.dtype, device) -> torch.Tensor:
    return _unfilled(torch.empty, shape, dtype=dtype, device=device)


def empty(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """`buffer` for kernel outputs: NaN-filled when poisoning is on, so unwritten elements show."""
    if _recorder is not None:
        return _recorder.make(empty, (shape, dtype, device), _empty)
    return _empty(shape, dtype, device)


def _empty(shape, dtype: torch.dtype, device) -> torch.Tensor:
    return _poisoned(_unfilled(torch.empty, shape, dtype=dtype, device=device))


def empty_like(x: torch.Tensor) -> torch.Tensor:
    """`empty` with x's shape, dtype and memory layout (x's strides when x is dense, else contiguous)."""
    if _recorder is not None:  # (a replay calls it on its own x: x's layout, which the signature fixes, decides)
        return _recorder.make(empty_like, (x,), _empty_like)
    return _empty_like(x)


def _empty_like(x: torch.Tensor) -> torch.Tensor:
    return _poisoned(_unfilled(torch.empty_like, x))


def derive(fn, *args) -> torch.Tensor:
    """fn(*args): a tensor, or a tuple of them, made or derived from tensors among args (a view of part of a buffer)
    by torch calls a recording does not see one by one, recorded as one step
    (`Recording.make`), so that a replay makes or derives them again from its own tensors."""
    if _recorder is not None:
        return _recorder.make(derive, (fn, *args), lambda f, *a: f(*a))
    return fn(*args)


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


# --- launching compiled kernels -----------------------------------------------------------------
# Triton's own launch (`kernel[grid](*args)`) specialises every argument on every call: for a kernel
# of ~60 arguments that is tens of microseconds of host time, more than half of a small call's
# (benchmarks/notes/ssd_forward.md, "The host path at 1x2K"). `launch` keeps the compiled kernel of a
# call under a key that fixes everything Triton specialises on, and later calls with the same key
# launch it directly through the compiled kernel's own launcher (CompiledKernel[grid], the same in
# Triton 3.6 and 3.9).

# FLASHSSM_DIRECT_LAUNCH=0 turns the direct path off (every launch through Triton's own), should a Triton
# version change what a compiled kernel's launcher takes; benchmarks/host_overhead.py compares the two.
direct_launch = os.environ.get("FLASHSSM_DIRECT_LAUNCH", "1") != "0"
# A direct launch passes the tensors' addresses (ints) rather than the tensors: the launcher's per-argument data_ptr()
# call and driver query are skipped (the tensors are CUDA tensors the caller holds, checked by is_cuda; their
# devices by the validation layer). False: the tensors (A/B).
POINTER_ADDRESSES = True
_MAX_COMPILED = 4096  # cached (kernel, specialisation) entries; cleared when full
_compiled: dict = {}
_layouts: dict = {}  # id(kernel) -> number of leading pointer arguments, or -1: always Triton's launch
_descriptor_args: dict = {}  # id(kernel) -> positions among its scalars where a tensor descriptor may stand


def descriptor_arguments(kernel, *names: str) -> None:
    """Declare that `kernel`'s parameters `names` (after its pointers) take Triton tensor descriptors (or a placeholder
    int): `launch` then keys them by what Triton specialises on (dtype, block shape, layout, padding), not by the
    tensor they describe, and still launches the kernel directly; a prepared call rebuilds them over its replay's
    tensors (`_Described`)."""
    first = next(i for i, a in enumerate(kernel.arg_names) if not a.endswith("_ptr"))
    _descriptor_args[id(kernel)] = tuple(kernel.arg_names.index(n) - first for n in names)


def _is_descriptor(a) -> bool:
    return type(a).__name__ == "TensorDescriptor"


def _scalars_key(kernel, scalars: tuple) -> tuple:
    """The scalars as `_key` takes them: a declared descriptor as its specialisation (`descriptor_arguments`)."""
    places = _descriptor_args.get(id(kernel))
    if places is None:
        return scalars
    out = list(scalars)
    for i in places:
        a = out[i]
        if _is_descriptor(a):
            out[i] = ("desc", a.base.dtype, tuple(a.block_shape), a.layout, a.padding)
    return tuple(out)


def _pointer_prefix(kernel, args: tuple) -> int:
    """How many of the kernel's leading arguments are tensors (its `*_ptr` parameters), if the call
    fits the layout `launch` can key cheaply: tensors first, then scalars, then every constexpr by
    keyword. -1 otherwise."""
    names = getattr(kernel, "arg_names", None)
    if names is None or len(args) > len(names):
        return -1
    n = 0
    while n < len(args) and names[n].endswith("_ptr"):
        n += 1
    tensors_first = all(isinstance(a, torch.Tensor) for a in args[:n])
    places = _descriptor_args.get(id(kernel), ())
    scalars_after = all(isinstance(a, (int, float)) or (i in places and _is_descriptor(a))
                        for i, a in enumerate(args[n:]))
    return n if tensors_first and scalars_after else -1


def _layout(kernel, args: tuple) -> int:
    """The kernel's `_pointer_prefix`, found once a kernel (-1 also once `_keep` finds it cannot launch directly)."""
    n = _layouts.get(id(kernel))
    if n is None:
        n = _layouts[id(kernel)] = _pointer_prefix(kernel, args)
    return n


def _direct(compiled) -> bool:
    """Whether a launch's result is a compiled kernel that can be launched again by itself."""
    return all(hasattr(compiled, a) for a in ("function", "packed_metadata", "__getitem__"))


def _constexpr_tail(kernel, n_args: int, meta: dict) -> tuple | None:
    """The values of the kernel's parameters after its first n_args, in signature order, as its compiled launcher
    takes them: from `meta`, or a parameter's default where the call leaves it out (as Triton's launch then
    compiles it; such a kernel took Triton's launch on every call before, e.g. the Gluon forward's OWN3: ~50 us of a
    1x2K call's host time on an H100's host). None where a parameter is in neither."""
    defaults = {p.name: p.default for p in getattr(kernel, "params", ()) if getattr(p, "has_default", False)}
    tail = []
    for name in kernel.arg_names[n_args:]:
        if name in meta:
            tail.append(meta[name])
        elif name in defaults:
            tail.append(defaults[name])
        else:
            return None
    return tuple(tail)


def _keep(key, kernel, n_args: int, meta: dict, compiled) -> bool:
    """Keep a compiled kernel for direct launches under `key`; False where it cannot be launched directly."""
    if not _direct(compiled):
        return False
    tail = _constexpr_tail(kernel, n_args, meta)
    if tail is None:  # a parameter whose value is unknown here: keep Triton's launch for this kernel
        _layouts[id(kernel)] = -1
        return False
    if len(_compiled) >= _MAX_COMPILED:
        _compiled.clear()
    _compiled[key] = (compiled, tail)
    return True


# Triton's pipeline stages when a launch does not name them (its CUDA default)
DEFAULT_STAGES = 3


def _out_of_shared_memory(e: Exception) -> bool:
    return type(e).__name__ == "OutOfResources" and getattr(e, "name", "") == "shared memory"


def _fewer_stages(meta: dict, e: Exception) -> dict:
    """The launch options `meta` with one pipeline stage fewer, after Triton refused a launch for want of shared memory
    (`e`, OutOfResources at the kernel's first launch, before it runs). The configurations were measured on Hopper,
    which lets a block opt in to 227 KB; an A100 allows 163 KB, Ada and consumer Blackwell 99 KB, and a kernel's
    stages of loaded tiles are most of what it asks. Where one stage was too many already, a RuntimeError that says so,
    from `e`."""
    stages = meta.get("num_stages", DEFAULT_STAGES)
    if stages <= 1:
        raise RuntimeError(f"flashssm: {e} (one pipeline stage already; this GPU allows a block {e.limit // 1024} KB "
                           "of shared memory: please report the shape and GPU)") from e
    return {**meta, "num_stages": stages - 1}


def cached_launch(kernel, grid: tuple, args: tuple, device_index: int, stream: int, meta: dict, on_compile=None):
    """`launch` on a known CUDA device and stream (separate so that tests can drive it with stand-ins). A kernel
    refused for want of shared memory at its first launch (a GPU with less than Hopper's) is compiled again with one
    pipeline stage fewer, until it fits (`_fewer_stages`); its later launches take that compile under the same key
    (a launch outside the direct layout, which Triton launches itself every call, is refused and retried each call)."""
    asked = meta
    while True:
        try:
            return _cached_launch(kernel, grid, args, device_index, stream, meta, on_compile, asked)
        except Exception as e:
            if not _out_of_shared_memory(e):
                raise
            meta = _fewer_stages(meta, e)


def _cached_launch(kernel, grid: tuple, args: tuple, device_index: int, stream: int, meta: dict, on_compile,
                   asked: dict):
    n = _layout(kernel, args)
    if n < 0:
        return kernel[grid](*args, **meta)
    ptrs = args[:n]
    addresses = [t.data_ptr() for t in ptrs]
    key = _key(kernel, device_index, meta, _scalars_key(kernel, args[n:]), [t.dtype for t in ptrs],
               [a & 15 for a in addresses])
    entry = _compiled.get(key)
    if meta is not asked:  # fewer stages than asked (`cached_launch`): kept under the asked options' key too
        asked_key = _key(kernel, device_index, asked, key[3], key[4], key[5])
        if entry is None:
            _compiled.pop(asked_key, None)  # (a compile of the asked options, ahead: refused at its launch)
        else:
            _compiled[asked_key] = entry
    if entry is None:
        job = _pending.get(key)
        if job is not None:  # queued for the background thread (`plan_ahead`)
            if job.take():  # not started: compile it here rather than wait behind the queue
                ahead_stats["taken"] += 1
                job.finish()
            else:  # compiling: wait for it rather than compile it again
                ahead_stats["waited"] += 1
                job.done.wait()
                entry = _compiled.get(key)
    if entry is None:
        if on_compile is not None:
            _run_planner(on_compile)
        compiled = kernel[grid](*args, **meta)
        if _keep(key, kernel, len(args), meta, compiled) and meta is not asked:
            _compiled[asked_key] = _compiled[key]
        return compiled
    compiled, tail = entry
    if POINTER_ADDRESSES and all([t.is_cuda for t in ptrs]):
        # the tensors' addresses as ints: the launcher takes an int as the pointer itself, where for a tensor it calls
        # data_ptr() and asks the driver about the address (cuPointerGetAttribute), each argument, each launch
        ptrs = addresses
    _run_compiled(compiled, (grid + (1, 1))[:3], stream, _launch_hooks(), *ptrs, *args[n:], *tail)
    return compiled


def _run_compiled(compiled, grid: tuple, stream: int, hooks: bool, *args) -> None:
    """compiled[grid](*args, stream=stream) (grid of three): with launch hooks set (`_launch_hooks`), through Triton's
    runner; else its own call of the compiled kernel's launcher (Triton 3.6 to 3.9), without the hooks' metadata and
    their calls: the runner builds that metadata and the launcher calls both hooks, empty, every launch."""
    if hooks:
        compiled[grid](*args, stream=stream)
    else:
        compiled.run(*grid, stream, compiled.function, compiled.packed_metadata, None, None, None, *args)


def launch(kernel, grid: tuple, args: tuple, device: torch.device, **meta):
    """kernel[grid](*args, **meta) for a @triton.jit kernel whose `*_ptr` tensor arguments come first,
    then its scalars (positional, in `args`), then its constexprs and launch options (keywords, in
    `meta`). On a GPU, a call whose dtypes, alignments, scalars and constexprs repeat an earlier call's
    launches that call's compiled kernel directly. Returns the compiled kernel (None under the
    interpreter, and while torch.compile traces the call).
    Inside `compiling_ahead(planner)`, the planner runs just before the first launch that compiles its kernel; inside
    `plan_ahead`'s dry run (meta tensors) nothing launches: the kernel is handed to the background compiles."""
    if _recorder is not None:
        return _recorder.launch(kernel, grid, args, device, meta)
    return _launch(kernel, grid, args, device, meta)[0]


def _launch(kernel, grid: tuple, args: tuple, device: torch.device, meta: dict):
    """`launch`: (its result, the compiled kernel a replay may launch directly, or None)."""
    if device.type != "cuda" or not direct_launch or torch.compiler.is_compiling():
        if device.type == "meta":  # (Triton would launch the kernel on address 0: only a dry run may get here)
            planned = _planning_device()
            if planned is None:
                raise RuntimeError("a kernel launch on meta tensors outside _runtime.plan_ahead's dry run")
            return _compile_ahead(kernel, grid, args, planned, meta), None
        # (under torch.compile, Dynamo traces Triton's own launch into its graph; the direct one reads the raw
        # stream, which it cannot trace: a graph break, an error under fullgraph)
        return kernel[grid](*args, **meta), None
    index = device.index if device.index is not None else torch.cuda.current_device()
    compiled = cached_launch(kernel, grid, args, index, raw_stream(index), meta, _planner)
    return compiled, compiled


def _key(kernel, device_index: int, meta: dict, scalars: tuple, dtypes: list, low_bits: list) -> tuple:
    # Triton specialises a tensor on its dtype and 16-byte alignment, an int on its value's range,
    # divisibility by 16 and equality to 1: the dtypes, the addresses' low bits and the scalars' values
    # determine all of it
    return (id(kernel), device_index, tuple(meta.items()), scalars, tuple(dtypes), tuple(low_bits))


def _hooks():
    try:
        from triton import knobs
    except ImportError:  # (a Triton before knobs: its launches take Triton's runner)
        return None
    return knobs.runtime


_knobs = False  # triton.knobs.runtime, found at the first launch (flashssm's import does not import Triton)


def _hooked(hook) -> bool:
    if hook is None:
        return False
    calls = getattr(hook, "calls", None)  # (Triton 3.6 and 3.9: a HookChain, empty unless a profiler added to it)
    return calls is None or bool(calls)


# A direct launch calls the compiled kernel's launcher itself, as CompiledKernel[grid](...) would but without the launch
# hooks' metadata and calls, where no hook is set (`_launch_hooks`). False: through CompiledKernel[grid] (A/B).
LAUNCHER_DIRECT = True


def _launch_hooks() -> bool:
    """Whether a launch must go through Triton's runner: launch hooks are set (a profiler such as proton's), this
    Triton has no knobs, or LAUNCHER_DIRECT is off."""
    global _knobs
    if _knobs is False:
        _knobs = _hooks()
    return (not LAUNCHER_DIRECT or _knobs is None or _hooked(_knobs.launch_enter_hook)
            or _hooked(_knobs.launch_exit_hook))


# --- prepared calls -------------------------------------------------------------------------------
# A small call is bound by its host path: a 1x2K forward of the 2.7B SSD shape took 180 us of host time on the H200
# machine, 92 of them flashssm's own Python (validation, blockers, the configuration, argument lists, the launch keys)
# and most of the rest Triton's launch path (benchmarks/notes/ssd_forward.md, fiftieth session). All that Python decides
# is a function of the inputs' metadata (shapes, strides, dtypes, devices, 16-byte alignment), the call's options and
# module switches. So a public op records what its call did the first time it meets a signature (`Recording`): the
# allocations through `buffer`, `empty` and the workspace, the launches through `launch` with their compiled kernels,
# and (`ops=True`) every torch call on the way that makes a tensor (casts, sums, fills, views). A later call with the
# same signature replays that (`Prepared.run`): the same steps in the same order with the new tensors in place of the
# recorded ones, and nothing else; each made tensor is let go after the last step that uses it, so a replay holds no
# more memory than the call it stands for. An op may record only a path whose every tensor comes from its inputs or
# those steps. FLASHSSM_PREPARED=0 turns it off (every call then takes its whole Python path).
PREPARED = os.environ.get("FLASHSSM_PREPARED", "1") != "0"
_MAX_PREPARED = 512
_prepared: dict = {}
_recorder = None  # the `Recording` under way (one at a time; the thread that started it), or None


def tensor_signature(t):
    """What an op's Python path reads of a tensor argument (None stays None): shape, strides, dtype, device and 16-byte
    alignment, the part of a prepared call's key (`prepared`) each tensor gives."""
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15)


def call_signature(op: str, tensors: tuple, options: tuple):
    """A prepared call's key: (op, each tensor's `tensor_signature`, the options), or None where an argument cannot be
    told by it (not a tensor, an option that does not hash): such a call takes its whole path, and its errors."""
    try:
        key = (op, *[tensor_signature(t) for t in tensors], *options)
        hash(key)
    except Exception:
        return None
    return key


def backward_key(key, tensors: tuple, needs) -> tuple | None:
    """What a recorded training call's backward replays under: its forward's key (None: the forward had none, so the
    backward records nothing), the signatures of every tensor it reads (the incoming gradients and what the forward
    saved, its inputs included: saved-tensor hooks may return them in another layout than the forward's key holds)
    and which gradients are wanted."""
    if key is None or not PREPARED:
        return None
    return (key, "backward", *[tensor_signature(t) for t in tensors], tuple(needs))


def wants_grad(*tensors) -> bool:
    """Whether a call on these tensors builds an autograd graph (True for an argument that is not a tensor: the whole
    path's validation then says what is wrong)."""
    try:
        return torch.is_grad_enabled() and needs_grad(*tensors)
    except AttributeError:
        return True


def prepared(key):
    """The prepared call recorded under `key` (None: none, or the switches and states that forbid replays)."""
    if not PREPARED or _force_reference or torch.compiler.is_compiling():
        return None
    plan = _prepared.get(key)
    return None if type(plan) is _Refused else plan


def replay(key, inputs: tuple):
    """The outputs of the prepared call of `key` replayed on `inputs`, or None: no key, nothing recorded under it, or
    a replay that cannot stand for the call (`Prepared.run`). The caller then takes its whole path."""
    plan = prepared(key) if key is not None else None
    return plan.run(inputs) if plan is not None else None


class _Refused:
    """What `_prepared` keeps for a key whose recording could not be replayed (a value read from a tensor, a tensor or
    an output no step made, no launch at all): the switches it was recorded under. While they hold, later calls of the
    key take their whole path without recording it again (with torch calls recorded, a recording costs the call a few
    microseconds a torch call)."""

    __slots__ = ("switch_fn", "switches")

    def __init__(self, switch_fn):
        self.switch_fn, self.switches = switch_fn, switch_fn()


def clear_prepared() -> None:
    """Forget every prepared call (tests that change what a call would do by patching functions)."""
    _prepared.clear()


def _switches() -> tuple:
    # what `launch` and the allocations read that a replay would not (A/B scripts change them between calls)
    return direct_launch, POINTER_ADDRESSES, torch.get_float32_matmul_precision()


_SIMPLE = (bool, int, float, str, tuple, type(None))
_switch_readers: dict = {}


def module_switches(*modules) -> tuple:
    """The values of every upper-case global of a plain type (bool, int, float, str, tuple, None) in `modules`: the
    switches and tuning constants a path's Python may read, for a prepared call to check (`Recording`'s `switches`)
    where listing them by hand would let one added later slip past."""
    values = []
    for m in modules:
        read = _switch_readers.get(m.__name__)
        if read is None:  # (one attrgetter a module: its names read in C, a tuple each call)
            names = [n for n, v in vars(m).items() if n.isupper() and isinstance(v, _SIMPLE)]
            read = operator.attrgetter(*names) if len(names) > 1 else lambda m, names=names: tuple(
                getattr(m, n) for n in names)
            _switch_readers[m.__name__] = read
        values.append(read(m))
    return tuple(values)


# what a recorded torch call may return other than tensors: a tensor's metadata, which a signature fixes (anything
# else, such as .item() or .tolist(), reads values: a call that does cannot be replayed)
_METADATA = frozenset({
    "data_ptr", "dim", "ndimension", "element_size", "numel", "nelement", "size", "storage_offset", "stride",
    "is_contiguous", "is_floating_point", "is_complex", "get_device", "__len__", "shape", "dtype", "device", "is_cuda",
    "is_cpu", "is_meta", "ndim", "requires_grad", "layout", "itemsize", "nbytes", "untyped_storage"})


def _torch_name(func) -> str:
    name = getattr(func, "__name__", "")
    if name == "__get__":  # (a property such as .shape: the descriptor's bound __get__)
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


class _Slot:
    """A recorded torch call's tensor argument: its place among the call's tensors (inputs, then what steps made)."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


class _Nest:
    """A list or tuple argument of a recorded torch call that holds tensors."""

    __slots__ = ("kind", "items")

    def __init__(self, kind, items: tuple):
        self.kind, self.items = kind, items


class _Described:
    """A recorded launch's scalars where some are tensor descriptors: each descriptor as its class, the place of the
    tensor it describes and the rest of its fields, rebuilt over the replay's tensor (a descriptor holds its tensor's
    address; the shape, strides and block a replay's signature fixes)."""

    __slots__ = ("scalars", "slots")

    def __init__(self, scalars: tuple, slots: tuple):
        self.scalars, self.slots = scalars, slots  # slots: (position, cls, place, shape, strides, block, layout, pad)

    def build(self, flat: list) -> tuple:
        out = list(self.scalars)
        for pos, cls, place, shape, strides, block, layout, padding in self.slots:
            out[pos] = cls(flat[place], shape, strides, block, layout, padding)
        return tuple(out)


def _resolve(a, flat: list):
    if type(a) is _Slot:
        return flat[a.i]
    if type(a) is _Nest:
        return a.kind([_resolve(v, flat) for v in a.items])
    return a


class _Unknown(Exception):
    """A tensor that is neither an input of the recorded call nor made by one of its steps."""


class _OpLog(TorchFunctionMode):
    """Hands every torch call of the recording thread to its `Recording` (`ops=True`), outside allocations and
    launches (which it records as such) and compile-ahead dry runs."""

    def __init__(self, rec: "Recording"):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)  # (the mode is off inside its own handler: nested calls are not seen)
        rec = self.rec
        if rec.ok and not rec.paused and _planning_device() is None:
            rec.op(func, args, kwargs, out)
        return out


_ALLOC, _OP, _LAUNCH = 0, 1, 2


class Recording:
    """with Recording(key, inputs, switches) as rec: ...; rec.outputs = (...): records the block's allocations and
    launches (and with `ops`, its torch calls) and keeps them as the prepared call of `key` (None: nothing recorded),
    if they can be replayed. `inputs`: the call's tensors (None for absent ones), in the order a replay gets them;
    `outputs`: what the call returns, each None or an input or a tensor a step made; `switches`: a function of no
    arguments whose value a replay must see unchanged (the op's module switches); `extra`: kept with the prepared call
    for its caller (`Prepared.extra`). Only the thread that opened it is recorded. A compile-ahead dry run inside the
    block (meta tensors) is not recorded. Tensors are told apart by identity while they live (a weak reference each:
    a recording holds no tensor, so the recorded call's memory is what it would be without it)."""

    __slots__ = ("key", "switches", "extra", "outputs", "thread", "steps", "places", "n", "n_inputs", "devices",
                 "ok", "paused", "ops", "_mode")

    def __init__(self, key, inputs: tuple, switches, extra=None, ops: bool = False):
        self.key, self.switches, self.extra, self.ops = key, switches, extra, ops
        self.outputs, self.paused, self._mode = None, 0, None
        self.ok = key is not None and PREPARED
        if not self.ok:  # (nothing else is read: under torch.compile, where the key is None, Dynamo traces this far)
            return
        self.thread = threading.get_ident()
        self.steps, self.places, self.devices = [], {}, set()
        self.n, self.n_inputs = 0, len(inputs)
        refused = _prepared.get(key)
        if type(refused) is _Refused and refused.switch_fn() == refused.switches:
            self.ok = False
        if self.ok:
            for t in inputs:
                if t is not None and self._place(t) >= 0:
                    self.ok = False  # (one tensor twice: the steps could not say which input an argument is)
                self._new(t)

    def __enter__(self):
        global _recorder
        if self.ok and _recorder is None and not torch.compiler.is_compiling():
            _recorder = self
            if self.ops:
                self._mode = _OpLog(self)
                self._mode.__enter__()
        else:
            self.ok = False
        return self

    def __exit__(self, kind, *exc):
        global _recorder
        if _recorder is self:
            _recorder = None
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
                self._mode = None
            if kind is None and self.outputs is not None:
                op_switches = self.switches
                switch_fn = lambda: (_switches(), op_switches())  # noqa: E731 (what a replay checks)
                plan = _prepare(self, switch_fn) if self.ok else None
                if len(_prepared) >= _MAX_PREPARED:
                    _prepared.clear()
                _prepared[self.key] = plan if plan is not None else _Refused(switch_fn)
        self.steps = self.places = self.outputs = None

    def _mine(self) -> bool:
        return self.thread == threading.get_ident()

    def _place(self, t) -> int:
        entry = self.places.get(id(t))
        return entry[0] if entry is not None and entry[1]() is t else -1

    def _new(self, t) -> None:
        if t is not None:
            self.places[id(t)] = (self.n, weakref.ref(t))
        self.n += 1

    def _template(self, a):
        if isinstance(a, torch.Tensor):
            i = self._place(a)
            if i < 0:
                raise _Unknown
            return _Slot(i)
        if type(a) in (list, tuple):
            items = tuple(self._template(v) for v in a)
            return _Nest(type(a), items) if any(type(v) in (_Slot, _Nest) for v in items) else a
        if isinstance(a, dict) and any(isinstance(v, torch.Tensor) for v in a.values()):
            raise _Unknown
        return a

    def make(self, fn, args: tuple, impl):
        """impl(*args), an allocation, recorded as `fn(*args)` (the torch calls inside it are not steps of their
        own); `fn` returns a tensor or a tuple of them. Tensor arguments (an allocation like a tensor) are taken, as a
        torch call's, from the replay's tensors."""
        if not self._mine():
            return impl(*args)
        self.paused += 1
        try:
            result = impl(*args)
        finally:
            self.paused -= 1
        if _planning_device() is None and self.ok:
            try:
                targs = tuple(self._template(a) for a in args)
            except _Unknown:
                self.ok = False
                return result
            many = isinstance(result, tuple)
            first = self.n
            for t in result if many else (result,):
                self._new(t)
            if any(type(a) in (_Slot, _Nest) for a in targs):
                self.steps.append((_OP, fn, targs, ({}, False), first, self.n - first, many))
            else:
                self.steps.append((_ALLOC, fn, args, first, self.n - first, many))
        return result

    def launch(self, kernel, grid, args, device, meta):
        """_launch(...) recorded as a step (the torch calls inside Triton's launch are not steps)."""
        if not self._mine():
            return _launch(kernel, grid, args, device, meta)[0]
        self.paused += 1
        try:
            result, compiled = _launch(kernel, grid, args, device, meta)
        finally:
            self.paused -= 1
        if device.type != "meta":
            self.launched(kernel, grid, args, device, meta, compiled)
        return result

    def launched(self, kernel, grid, args, device, meta, compiled) -> None:
        if not self._mine() or not self.ok:
            return
        k = 0
        while k < len(args) and isinstance(args[k], torch.Tensor):
            k += 1
        idx = tuple(self._place(a) for a in args[:k])
        if -1 in idx or any(isinstance(a, torch.Tensor) for a in args[k:]):
            self.ok = False  # (a tensor no step made, or one among the scalars)
            return
        rest = tuple(args[k:])
        if any(_is_descriptor(a) for a in rest):  # (rebuilt at a replay over its tensor there: `_Described`)
            slots = []
            for pos, a in enumerate(rest):
                if _is_descriptor(a):
                    place = self._place(a.base)
                    if place < 0:  # (a tensor no step made: the replay could not say which it is)
                        self.ok = False
                        return
                    slots.append((pos, type(a), place, list(a.shape), list(a.strides), list(a.block_shape), a.layout,
                                  a.padding))
            rest = _Described(rest, tuple(slots))
        tail = None
        if compiled is not None and device.type == "cuda" and _direct(compiled) and _layout(kernel, args) == k:
            tail = _constexpr_tail(kernel, len(args), meta)
        # the places whose alignment a replay checks before the launcher takes them: the made tensors (the inputs'
        # alignment is in the signature; the compiled kernel assumes 16 bytes for every pointer)
        check = tuple(j for j, i in enumerate(idx) if i >= self.n_inputs)
        self.steps.append((_LAUNCH, kernel, tuple(grid) + (1,) * (3 - len(grid)), idx, rest, tail, meta,
                           compiled if tail is not None else None, check))
        self.devices.add(device)

    def op(self, func, args: tuple, kwargs: dict, out) -> None:
        if not self._mine():
            return
        if isinstance(out, torch.Tensor):
            results = (out,)
        elif isinstance(out, (tuple, list)) and out and all(isinstance(t, torch.Tensor) for t in out):
            results = tuple(out)
        elif out is None and _torch_name(func) == "__setitem__":
            results = ()
        elif _torch_name(func) not in _METADATA:
            self.ok = False  # (a value read from a tensor, or a call this recording does not know)
            return
        else:
            return
        try:
            targs = tuple(self._template(a) for a in args)
            tkw = {k: self._template(v) for k, v in kwargs.items()}
        except _Unknown:
            self.ok = False
            return
        if not any(type(v) in (_Slot, _Nest) for v in tkw.values()):
            tkw = (kwargs, False)  # (no tensor among them: passed as recorded)
        else:
            tkw = (tkw, True)
        first = self.n
        for t in results:
            self._new(t)
        self.steps.append((_OP, func, targs, tkw, first, len(results), isinstance(out, (tuple, list))))

    def unreplayable(self) -> None:
        if self._mine():
            self.ok = False


class Prepared:
    """A recorded call: `run(inputs)` replays it on new tensors of the recorded signature."""

    __slots__ = ("steps", "outputs", "n_inputs", "blank", "switch_fn", "switches", "index", "extra")

    def run(self, inputs: tuple):
        """The call's outputs, or None where a replay cannot stand for it (a switch changed): the caller then takes
        its whole path, which records it again."""
        if self.switch_fn() != self.switches:
            return None
        if _recorder is not None:
            _recorder.unreplayable()  # (a replay inside another recording: its launches would not be recorded)
        flat = [*inputs, *self.blank]
        # (Triton launches on the current GPU: the recorded one made current, as the whole path's `on_device` does)
        if self.index is not None and self.index != torch.cuda.current_device():
            with torch.cuda.device(self.index):
                self._replay(flat)
        else:
            self._replay(flat)
        return tuple(None if i is None else flat[i] for i in self.outputs)

    def _replay(self, flat: list) -> None:
        stream = hooks = None
        for step, frees in self.steps:
            kind = step[0]
            if kind == _LAUNCH:
                _, kernel, grid, idx, rest, tail, meta, compiled, check = step
                tensors = [flat[i] for i in idx]
                if type(rest) is _Described:
                    rest = rest.build(flat)
                if compiled is not None:
                    addresses = [t.data_ptr() for t in tensors]
                    if not any(addresses[j] & 15 for j in check):
                        if stream is None:
                            stream, hooks = raw_stream(self.index), _launch_hooks()
                        _run_compiled(compiled, grid, stream, hooks, *addresses, *rest, *tail)
                    else:  # (an allocator that gave less than 16-byte alignment: Triton's launch specialises for it)
                        kernel[grid](*tensors, *rest, **meta)
                else:  # the interpreter, or a kernel Triton's own launch takes
                    kernel[grid](*tensors, *rest, **meta)
                tensors = rest = None  # (a tensor this launch used last must not outlive it here, nor a descriptor's)
            elif kind == _ALLOC:
                _, fn, args, first, count, many = step
                if many:
                    flat[first:first + count] = fn(*args)
                else:
                    flat[first] = fn(*args)
            else:
                _, func, targs, (kwargs, resolve), first, count, many = step
                if resolve:
                    kwargs = {k: _resolve(v, flat) for k, v in kwargs.items()}
                out = func(*[_resolve(a, flat) for a in targs], **kwargs)
                if many:
                    flat[first:first + count] = out
                elif count:
                    flat[first] = out
                out = kwargs = None
            for i in frees:
                flat[i] = None


def _prepare(rec: Recording, switch_fn) -> Prepared | None:
    """The replay of a recording, checking `switch_fn` before it runs, or None where it cannot stand for the call: no
    launch, launches on several devices, an output that is neither an input nor made by a step."""
    outputs = tuple(None if t is None else rec._place(t) for t in rec.outputs)
    if -1 in outputs or len(rec.devices) != 1 or not any(s[0] == _LAUNCH for s in rec.steps):
        return None
    # each made tensor let go after the last step that reads or makes it (an output never)
    last = {}
    for k, step in enumerate(rec.steps):
        if step[0] == _LAUNCH:
            used = list(step[3]) + ([slot[2] for slot in step[4].slots] if type(step[4]) is _Described else [])
        elif step[0] == _ALLOC:
            used = list(range(step[3], step[3] + step[4]))
        else:
            used = _slots_in(step[2]) + _slots_in(list(step[3][0].values()) if step[3][1] else [])
            used += list(range(step[4], step[4] + step[5]))
        for i in used:
            last[i] = k
    keep = set(i for i in outputs if i is not None)
    frees = [[] for _ in rec.steps]
    for i, k in last.items():
        if i >= rec.n_inputs and i not in keep:
            frees[k].append(i)
    plan = Prepared()
    plan.steps = tuple((step, tuple(f)) for step, f in zip(rec.steps, frees))
    plan.outputs, plan.n_inputs = outputs, rec.n_inputs
    plan.blank = (None,) * (rec.n - rec.n_inputs)
    plan.switch_fn, plan.switches = switch_fn, switch_fn()
    device = next(iter(rec.devices))
    plan.extra = rec.extra
    plan.index = device.index if device.type == "cuda" else None
    return plan


def _slots_in(args) -> list:
    found = []
    for a in args:
        if type(a) is _Slot:
            found.append(a.i)
        elif type(a) is _Nest:
            found.extend(_slots_in(a.items))
    return found


# --- compiling ahead ------------------------------------------------------------------------------
# A kernel's first call compiles it, on the CPU. On the H200 machine a first training call of the 2.8B selective scan
# at 8 x 2K compiled for 7 s in its forward and 13 s in its backward, 13 s and 50 s with packed sequences, and the
# 2.7B SSD call at 8 x 4K for 3 s and 10 s (benchmarks/notes/first_call.md): the forward's kernels, then, when
# autograd reached them, the backward's, one after the other. `plan_ahead` lets a forward start its backward's
# compiles beside its own: a planner (the op's backward wrapper run on meta tensors: no memory, no launch) hands every
# kernel the backward would launch to a background thread (JITFunction.warmup), which compiles them while the
# caller's thread compiles the forward. The backward's launch then finds its kernel compiled, waits for the compile
# under way instead of starting its own, or, for a kernel still in the queue (the thread busy with others: a model's
# backward runs its layers' ops in the reverse of the order their forwards queued them), compiles it itself. The
# planner runs only where a forward launch is about to compile (`compiling_ahead`): nothing in a call whose kernels
# are compiled. A planned kernel the backward turns out not to launch (dy in a layout the planner did not guess) costs
# background CPU time only: a launch's key is always its real arguments'. FLASHSSM_COMPILE_AHEAD=0 turns it off.
compile_ahead = os.environ.get("FLASHSSM_COMPILE_AHEAD", "1") != "0"
# The planner of the forward being launched (`compiling_ahead`): a module global rather than a thread-local one,
# since every launch reads it and a thread-local read was ~1 us of host time on this project's CPU machine. Another
# thread's launch that compiles meanwhile may run this thread's planner: it plans the same compiles (once:
# `_run_planner`). The device a dry run plans for (`plan_ahead`) is per thread: only launches and choices on meta
# tensors read it.
_planner = None
_plan_state = threading.local()


def _planning_device() -> torch.device | None:
    return getattr(_plan_state, "device", None)


_pending: dict = {}  # key -> its `_Job`, until the background thread has compiled it or a launch has taken it
_jobs: queue.SimpleQueue = queue.SimpleQueue()
_workers: list = []
# what the background compiles did (tests, benchmarks/first_call.py): kernels queued, compiled, failed to compile;
# planners run, planners that raised (the last error kept in `ahead_errors`); launches that waited for a compile under
# way, and launches that compiled a queued kernel themselves (the thread had not started it)
ahead_stats = {"planned": 0, "compiled": 0, "failed": 0, "planner_runs": 0, "planner_failed": 0, "waited": 0,
               "taken": 0}
ahead_errors: list = []


def _worker_count() -> int:
    # One thread. A compile holds Python's lock for part of its time (Triton's code generator is Python), so threads
    # beyond one slow the forward's compile in the caller's thread more than they add: on the H200 machine (16 cores,
    # benchmarks/notes/first_call.md) the 2.7B SSD 8x4K first training call took 6.9 s with one thread, 7.7 with four,
    # 9.3 with eight (12.6 without), the 2.8B selective scan 8x2K 15.0 / 16.8 (19.8). FLASHSSM_COMPILE_THREADS: another
    # count, for measurements.
    value = os.environ.get("FLASHSSM_COMPILE_THREADS") or "1"
    if not value.isdigit() or int(value) < 1:
        if f"threads:{value}" not in _warned:  # (said once a value, as `warn_reference_fallback` says its reasons)
            _warned.add(f"threads:{value}")
            warnings.warn(f"FLASHSSM_COMPILE_THREADS={value!r} is not a positive integer; compiling ahead in one "
                          "thread", RuntimeWarning, stacklevel=2)
        return 1
    return int(value)


class _Job:
    """A queued compile: taken by the first of the background thread (which compiles it) and a launch that needs it
    before the thread has started it (which compiles it itself rather than wait behind the queue)."""

    __slots__ = ("key", "kernel", "grid", "args", "meta", "index", "done", "taken")

    def __init__(self, key, kernel, grid, args, meta, index):
        self.key, self.kernel, self.grid, self.args, self.meta, self.index = key, kernel, grid, args, meta, index
        self.done = threading.Event()
        self.taken = False

    def take(self) -> bool:
        with _take_lock:
            if self.taken:
                return False
            self.taken = True
            return True

    def finish(self) -> None:
        """Out of the queue: its launch finds the compiled kernel, or compiles it itself."""
        _pending.pop(self.key, None)
        self.done.set()


_take_lock = threading.Lock()


def _work() -> None:
    while True:
        job = _jobs.get()
        if job is None:  # `_finish_compiles`: the interpreter is exiting
            return
        if not job.take():  # a launch took it first
            continue
        try:
            with torch.cuda.device(job.index) if torch.cuda.is_available() else contextlib.nullcontext():
                # tensors as their dtypes (Triton's MockTensor: a 16-byte aligned address, as the planner's keys say)
                compiled = job.kernel.warmup(*[a.dtype if isinstance(a, torch.Tensor) else a for a in job.args],
                                             grid=job.grid, **job.meta)
            _keep(job.key, job.kernel, len(job.args), job.meta, compiled)
            ahead_stats["compiled"] += 1
        except Exception as e:  # the launch compiles it again and raises there, where the caller sees it
            ahead_stats["failed"] += 1
            ahead_errors[:] = [e]
        finally:
            job.finish()


def _compile_ahead(kernel, grid, args, device: torch.device, meta: dict):
    """A dry run's launch: queue the kernel's compile unless it is compiled or queued. Returns None."""
    n = _layout(kernel, args)
    if n < 0:  # not a direct launch's layout: its launch compiles it
        return None
    key = _key(kernel, device.index, meta, _scalars_key(kernel, args[n:]), [t.dtype for t in args[:n]], [0] * n)
    if key in _compiled or key in _pending:
        return None
    job = _Job(key, kernel, grid, args, meta, device.index)
    _pending[key] = job
    ahead_stats["planned"] += 1
    _jobs.put(job)
    while len(_workers) < _worker_count():
        if not _workers:  # (registering twice is harmless: the second run finds no thread)
            atexit.register(_finish_compiles)
        worker = threading.Thread(target=_work, name=f"flashssm-compile-{len(_workers)}", daemon=True)
        worker.start()
        _workers.append(worker)
    return None


# A compile under way may take a while (the packed selective scan's backward: ~50 s on the H200 machine): past this,
# the exit says what it waits for
EXIT_NOTICE_S = 2.0


def _finish_compiles() -> None:
    """At the interpreter's exit (atexit): skip the queued compiles and wait for those under way. A daemon thread still
    inside Triton's compiler when Python finalises is torn down in the middle of C++ code: on the H200 machine (Python
    3.12) a script that ended right after an SSD training forward, its backward's kernels compiling, aborted
    (`terminate called after throwing an instance of ...`, exit status -6; benchmarks/exit_while_compiling.py)."""
    for job in list(_pending.values()):
        if job.take():  # not started: nobody needs it now
            job.finish()
    for _ in _workers:
        _jobs.put(None)
    for worker in _workers:
        worker.join(EXIT_NOTICE_S)
        if worker.is_alive():
            print("flashssm: finishing a kernel compile started ahead before exiting (FLASHSSM_COMPILE_AHEAD=0 turns "
                  "compiling ahead off)", file=sys.stderr, flush=True)
            worker.join()
    _workers.clear()


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's threads: the compiles queued or under way there never finish here, and
    a lock one of them held stays held. The child starts with an empty queue: its launches compile for themselves."""
    global _jobs, _take_lock
    _workers.clear()
    _pending.clear()
    _jobs = queue.SimpleQueue()
    _take_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _run_planner(planner) -> None:
    """Run a planner (see `plan_ahead`) once, at the first of its call's launches that compiles; a planner that fails
    plans nothing (the backward compiles when it runs)."""
    if getattr(planner, "ran", False):
        return
    planner.ran = True
    ahead_stats["planner_runs"] += 1
    try:
        planner()
    except Exception as e:
        ahead_stats["planner_failed"] += 1
        ahead_errors[:] = [e]


class compiling_ahead:
    """with compiling_ahead(planner): run `planner` (a `plan_ahead` call for the backward of the forward inside the
    block) before the first of the block's launches that compiles its kernel, if any does. Not nested. (A class: a
    contextlib generator cost ~2.5 us a call on this project's CPU machine, this ~0.7.)"""

    __slots__ = ("planner",)

    def __init__(self, planner):
        self.planner = planner

    def __enter__(self):
        global _planner
        _planner = self.planner

    def __exit__(self, *exc):
        global _planner
        _planner = None


def _can_plan(device: torch.device) -> bool:
    return compile_ahead and device.type == "cuda" and not torch.compiler.is_compiling()


def plan_ahead(device: torch.device, dry_run, *tensors) -> None:
    """Compile ahead what `dry_run(*meta_tensors)` would launch on CUDA `device`: each tensor (None kept) is replaced by
    a meta tensor of its shape, strides and dtype, and inside the call `launch` queues compiles instead of launching.
    A planner calls this; a forward runs inside `compiling_ahead(planner)`."""
    if not _can_plan(device):
        return
    metas = [None if t is None else (torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
                                     if isinstance(t, torch.Tensor) else t) for t in tensors]
    index = device.index if device.index is not None else (torch.cuda.current_device() if device.type == "cuda" else 0)
    _plan_state.device = torch.device("cuda", index)  # (the dry run's device-dependent choices: `sm_count`, `gpu_code`)
    try:
        dry_run(*metas)
    finally:
        _plan_state.device = None


def raw_stream(index: int) -> int:
    """The current CUDA stream of a device, as the address Triton's launchers take."""
    try:  # what Triton's own launcher reads: a few microseconds cheaper than torch.cuda.current_stream
        return torch._C._cuda_getCurrentRawStream(index)
    except AttributeError:
        return torch.cuda.current_stream(index).cuda_stream


class _Workspace:
    """Ticket counter, hand-over flags and state slots of one (device, stream).

    Between launches the counters and flags are all zero (the kernel leaves them so); slots hold
    no meaning between launches. Grown, never shrunk. A buffer outgrown is kept, not freed: a CUDA graph
    captured earlier (torch.compile's reduce-overhead mode, a user's capture) holds its address and replays
    launches that read and write it; freed, the allocator could hand that memory to another tensor, which the
    replays would then overwrite. Doubling bounds what is kept to the size of the buffers in use.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self.counter = _kept(device, lambda: torch.zeros(1, dtype=torch.int32, device=device))
        self.flags = torch.zeros(0, dtype=torch.int32, device=device)
        self.slots: dict[torch.dtype, torch.Tensor] = {}
        self.retired: list[torch.Tensor] = []

    def get(self, n_chains: int, slot_elems: int, dtype: torch.dtype):
        if _recorder is not None:
            return _recorder.make(_workspace_get, (self.device, n_chains, slot_elems, dtype),
                                  lambda *_: self._get(n_chains, slot_elems, dtype))
        return self._get(n_chains, slot_elems, dtype)

    def _get(self, n_chains: int, slot_elems: int, dtype: torch.dtype):
        if self.flags.numel() < n_chains:
            if self.flags.numel():
                self.retired.append(self.flags)
            size = max(n_chains, 2 * self.flags.numel())
            self.flags = _kept(self.device, lambda: torch.zeros(size, dtype=torch.int32, device=self.device))
        need = n_chains * slot_elems
        slots = self.slots.get(dtype)
        if slots is None or slots.numel() < need:
            if slots is not None:
                self.retired.append(slots)
            size = max(need, 2 * (0 if slots is None else slots.numel()))
            slots = _kept(self.device, lambda: _unfilled(torch.empty, size, dtype=dtype, device=self.device))
            self.slots[dtype] = slots
        return self.counter, self.flags, slots


_workspaces: dict[tuple, _Workspace] = {}

# The workspace's buffers made on a thread of their own, on a GPU outside a stream capture (`_kept`). torch.compile's
# CUDA graphs (mode="reduce-overhead") send every allocation of the thread that warms a graph up to that graph's memory
# pool, and then refuse the graph while the pool holds a tensor that is none of its outputs: a Mamba-2 model's
# training step stopped with "Detected 3 tensor(s) in the cudagraph pool not tracked as outputs", the three the
# counter, flags and slots made here (their allocation histories, seventy-second session). Made off the thread, the
# 24-layer 130M models' training steps run there as eager's (H200, 1 x 512: Mamba-2 73.40 -> 10.07 ms a step, Mamba-1
# 69.97 -> 13.32). The cost is a thread started when a buffer is made or grown, not on a call that reuses them.
WORKSPACE_OFF_THREAD = True


def _kept(device: torch.device, make):
    """make(): a buffer that outlives the call (the workspace's), made on another thread (on a stream of its own,
    waited for) where WORKSPACE_OFF_THREAD and a GPU and no capture under way, so that no graph pool this thread
    allocates to takes it."""
    if not WORKSPACE_OFF_THREAD or device.type != "cuda" or torch.cuda.is_current_stream_capturing():
        return make()
    return off_thread(device, make)


def off_thread(device: torch.device, make):
    """make() run on a new thread, with `device` current there (a CUDA device: on a stream of that thread's own, waited
    for before returning, so the caller's streams see its work done); its exception raised here. A CUDA device without
    an index is the caller's current one (the new thread's own current device is device 0)."""
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    result: list = []

    def run():
        try:
            if device.type == "cuda":
                with torch.cuda.device(device):
                    side = torch.cuda.Stream()
                    with torch.cuda.stream(side):
                        out = make()
                    side.synchronize()
            else:
                out = make()
            result.append((True, out))
        except BaseException as err:  # (handed to the caller)
            result.append((False, err))

    worker = threading.Thread(target=run, name="flashssm-kept", daemon=True)
    worker.start()
    worker.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def _current_stream(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    return raw_stream(device.index if device.index is not None else torch.cuda.current_device())


def workspace(device: torch.device) -> _Workspace:
    if device.type == "meta":  # a dry run (`plan_ahead`): nothing launches; kept nowhere
        return _Workspace(device)
    key = (device.type, device.index, _current_stream(device))
    ws = _workspaces.get(key)
    if ws is None:
        ws = _workspaces[key] = _Workspace(device)
    return ws


def _workspace_get(device: torch.device, n_chains: int, slot_elems: int, dtype: torch.dtype):
    """workspace(device).get(...): how a prepared call's replay gets the workspace of the stream it runs on."""
    return workspace(device).get(n_chains, slot_elems, dtype)
