"""The implementations a benchmark compares: flashssm's kernel and references, and the peers.

Implementations are registered per operation (`Workload.op`). Each `setup` takes a workload and
its inputs and returns a function of no arguments that runs the operation once and returns its
output (a tensor, or a tuple such as (y, new state) for the decoding steps), or raises
`Unavailable` with the reason. A function with a `calls` attribute runs that many operations per
call (a CUDA graph of several steps); the harness divides its time. Steps update their state in
place: each setup works on its own copy of the inputs' state. Peers are found at run time and
are never required.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, SSDWorkload, Workload


class Unavailable(Exception):
    """The implementation cannot run here; the message says why."""


@dataclass(frozen=True)
class Impl:
    name: str
    is_peer: bool          # compared against: the table shows its time over each other result's
    description: str
    setup: Callable[[Workload, dict], Callable[[], object]]
    on_cpu: bool = False   # run by default without a GPU (kernels under the interpreter, references)


def _require_ssd_kernel(w: SSDWorkload, inp: dict) -> None:
    from flashssm.ops import ssd

    if not ssd.kernel_available(inp["x"], w.dstate):
        raise Unavailable("no flashssm Triton kernel for this device and shape (ssd_scan would run the reference)")


def _flashssm(state_dtype):
    def setup(w: SSDWorkload, inp: dict):
        import flashssm

        _require_ssd_kernel(w, inp)
        options = _options(w, inp)
        return lambda: flashssm.ssd_scan(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size,
                                         state_dtype=state_dtype, cu_seqlens=inp.get("cu_seqlens"), **options)
    return setup


def _options(w: SSDWorkload, inp: dict) -> dict:
    """A layer workload's D, dt_bias and dt_softplus as keyword arguments (ssd_scan's and mamba_ssm's names)."""
    return w.options(*(inp[k] for k in w.extra_inputs))


def _no_layer(w: SSDWorkload, who: str) -> None:
    if w.layer:
        raise Unavailable(f"{who} takes no D, dt_bias or dt_softplus (a layer workload passes them)")


def _reference(compile: bool):
    def setup(w: SSDWorkload, inp: dict):
        from flashssm.ops.ssd.reference import ssd_scan_chunked

        options = _options(w, inp)
        return lambda: ssd_scan_chunked(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size,
                                        compile=compile, cu_seqlens=inp.get("cu_seqlens"), **options)[0]
    return setup


def import_mamba_ssm(module: str = "mamba_ssm.ops.triton.ssd_combined"):
    """A module of mamba_ssm's Triton kernels (its SSD by default), or Unavailable.

    Its package __init__ imports the CUDA extension `selective_scan_cuda` and optional kernels
    that a pure-Python install lacks, so the extension gets an empty stand-in and, if the package
    still fails to import, only the Triton submodules are loaded (a bare package module).
    """
    spec = importlib.util.find_spec("mamba_ssm")
    if spec is None:
        raise Unavailable("mamba_ssm is not installed")
    sys.modules.setdefault("selective_scan_cuda", types.ModuleType("selective_scan_cuda"))
    try:
        return importlib.import_module(module)
    except Exception:
        for name in [m for m in sys.modules if m == "mamba_ssm" or m.startswith("mamba_ssm.")]:
            del sys.modules[name]
        package = types.ModuleType("mamba_ssm")
        package.__path__ = list(spec.submodule_search_locations or [])
        sys.modules["mamba_ssm"] = package
        try:
            return importlib.import_module(module)
        except Exception as err:
            raise Unavailable(f"mamba_ssm's {module} does not import: {err}") from None


def _seq_idx(inp: dict) -> dict:
    """mamba_ssm's form of packed sequences: seq_idx (1, seqlen) int32, each token's sequence (its chunks may hold
    several); {} when not packed."""
    cu = inp.get("cu_seqlens")
    if cu is None:
        return {}
    counts = (cu[1:] - cu[:-1]).long()
    return {"seq_idx": torch.repeat_interleave(torch.arange(counts.numel(), device=cu.device, dtype=torch.int32),
                                               counts)[None]}


def _fla_packed(inp: dict) -> dict:
    """fla's form of packed sequences: cu_seqlens as int64, and its host copy (so fla does not read it back)."""
    cu = inp.get("cu_seqlens")
    return {} if cu is None else {"cu_seqlens": cu.long(), "cu_seqlens_cpu": cu.long().cpu()}


def _mamba_ssm(w: SSDWorkload, inp: dict):
    if not inp["x"].is_cuda:
        raise Unavailable("mamba_ssm's Triton kernels need a CUDA GPU")
    fn = import_mamba_ssm().mamba_chunk_scan_combined
    packed = _seq_idx(inp)
    options = _options(w, inp)
    return lambda: fn(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=w.chunk_size, **packed,
                      **options)


def _fla(w: SSDWorkload, inp: dict):
    """fla's chunk_simple_gla computes the same scan with q = C, k = B (per head), v = x·dt, g = dt·A.

    The per-head expansion of B and C and the products x·dt and dt·A are prepared outside the
    timed call, which flatters fla slightly.
    """
    _no_layer(w, "fla's chunk_simple_gla")
    if not inp["x"].is_cuda:
        raise Unavailable("fla's Triton kernels need a CUDA GPU")
    try:
        from fla.ops.simple_gla import chunk_simple_gla
    except Exception as err:
        raise Unavailable(f"fla is not importable: {err}") from None
    heads_per_group = w.nheads // w.ngroups
    q = inp["C"].repeat_interleave(heads_per_group, dim=2).contiguous()
    k = inp["B"].repeat_interleave(heads_per_group, dim=2).contiguous()
    v = (inp["x"].float() * inp["dt"][..., None]).to(inp["x"].dtype)
    g = (inp["dt"] * inp["A"]).float()
    packed = _fla_packed(inp)
    return lambda: chunk_simple_gla(q, k, v, g=g, scale=1.0, **packed)[0]


# ---- forward + backward ----

_TRAIN_INPUTS = ("x", "dt", "A", "B", "C")


def _train(forward, deterministic: bool = False, inputs: tuple[str, ...] | None = None):
    """A setup running forward(leaves) then the gradients of its y for inp['dy']: (y, then one gradient per
    name in `inputs`: for ssd_scan (None) dx, ddt, dA, dB, dC and a layer workload's dD, ddt_bias); with
    `deterministic`, under torch.use_deterministic_algorithms(True)."""
    def setup(w: Workload, inp: dict):
        call = forward(w, inp)
        names = inputs if inputs is not None else _TRAIN_INPUTS + w.extra_inputs
        leaves = [inp[k].detach().clone().requires_grad_() for k in names]

        def run():
            previous = torch.are_deterministic_algorithms_enabled()
            torch.use_deterministic_algorithms(deterministic or previous)
            try:
                y = call(*leaves)
                return (y.detach(), *torch.autograd.grad(y, leaves, inp["dy"]))
            finally:
                torch.use_deterministic_algorithms(previous)
        return run
    return setup


def _flashssm_fwd(w: SSDWorkload, inp: dict):
    import flashssm

    _require_ssd_kernel(w, inp)
    cu = inp.get("cu_seqlens")
    return lambda x, dt, A, B, C, *extra: flashssm.ssd_scan(x, dt, A, B, C, chunk_size=w.chunk_size, cu_seqlens=cu,
                                                            **w.options(*extra))


def _reference_fwd(w: SSDWorkload, inp: dict):
    from flashssm.ops.ssd.reference import ssd_scan_chunked

    cu = inp.get("cu_seqlens")
    return lambda x, dt, A, B, C, *extra: ssd_scan_chunked(x, dt, A, B, C, chunk_size=w.chunk_size, cu_seqlens=cu,
                                                           **w.options(*extra))[0]


def _mamba_ssm_fwd(w: SSDWorkload, inp: dict):
    if not inp["x"].is_cuda:
        raise Unavailable("mamba_ssm's Triton kernels need a CUDA GPU")
    fn = import_mamba_ssm().mamba_chunk_scan_combined
    packed = _seq_idx(inp)
    return lambda x, dt, A, B, C, *extra: fn(x, dt, A, B, C, chunk_size=w.chunk_size, **packed, **w.options(*extra))


def _fla_fwd(w: SSDWorkload, inp: dict):
    """chunk_simple_gla with its inputs prepared inside the timed call (and differentiated through)."""
    _no_layer(w, "fla's chunk_simple_gla")
    if not inp["x"].is_cuda:
        raise Unavailable("fla's Triton kernels need a CUDA GPU")
    try:
        from fla.ops.simple_gla import chunk_simple_gla
    except Exception as err:
        raise Unavailable(f"fla is not importable: {err}") from None
    r = w.nheads // w.ngroups
    packed = _fla_packed(inp)

    def call(x, dt, A, B, C):
        v = (x.float() * dt[..., None]).to(x.dtype)
        return chunk_simple_gla(C.repeat_interleave(r, dim=2), B.repeat_interleave(r, dim=2), v, g=(dt * A).float(),
                                scale=1.0, **packed)[0]
    return call


# ---- decoding steps ----

def _ssd_step_args(inp: dict, state: torch.Tensor) -> tuple[tuple, dict]:
    return ((state, inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"]),
            dict(D=inp["D"], dt_bias=inp["dt_bias"], dt_softplus=True))


def _flashssm_step(w, inp: dict):
    import flashssm

    state = inp["state"].clone()
    args, kw = _ssd_step_args(inp, state)
    return lambda: (flashssm.ssd_step(*args, **kw), state)


def _flashssm_step_graph(w, inp: dict):
    """Steps replayed from one CUDA graph: the device time of a step without Python or launch overhead.

    The graph holds `calls` steps, each on its own copy of the state (rows of one cache, picked by
    state_batch_indices), so no step finds its state in L2 as a real model's next layer would not.
    """
    import flashssm

    if not inp["x"].is_cuda:
        raise Unavailable("CUDA graphs need a CUDA GPU")
    state = inp["state"]
    batch = state.shape[0]
    calls = max(4, min(64, -(-(256 << 20) // (state.numel() * state.element_size()))))
    cache = state.repeat(calls, 1, 1, 1)
    rows = [torch.arange(i * batch, (i + 1) * batch, device=state.device) for i in range(calls)]
    out = torch.empty_like(inp["x"])
    _, kw = _ssd_step_args(inp, state)
    step = lambda i: flashssm.ssd_step(cache, inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], **kw,  # noqa: E731
                                       state_batch_indices=rows[i], out=out if i == 0 else None)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step(0)  # compile outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    cache[:batch].copy_(state)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            step(i)

    def run():
        graph.replay()
        return out, cache[:batch]
    run.calls = calls
    run.captured = (rows, cache, out)  # the graph reads these addresses: they must outlive it
    return run


def _reference_step(w, inp: dict):
    from flashssm.ops.ssd.reference import ssd_step_reference

    state = inp["state"].clone()
    args, kw = _ssd_step_args(inp, state)
    return lambda: (ssd_step_reference(*args, **kw), state)


def _mamba_ssm_step(w, inp: dict):
    """mamba_ssm's selective_state_update, called as its Mamba2.step does (per-head values expanded with stride 0)."""
    if not inp["x"].is_cuda:
        raise Unavailable("mamba_ssm's Triton kernels need a CUDA GPU")
    fn = import_mamba_ssm("mamba_ssm.ops.triton.selective_state_update").selective_state_update
    state = inp["state"].clone()
    p, n = w.headdim, w.dstate
    A = inp["A"][:, None, None].expand(-1, p, n)
    dt = inp["dt"][..., None].expand(-1, -1, p)
    D = inp["D"][:, None].expand(-1, p)
    dt_bias = inp["dt_bias"][:, None].expand(-1, p)
    return lambda: (fn(state, inp["x"], dt, A, inp["B"], inp["C"], D=D, dt_bias=dt_bias, dt_softplus=True), state)


def _scan_step_args(inp: dict, state: torch.Tensor):
    return ((state, inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"]),
            dict(D=inp["D"], z=inp["z"], delta_bias=inp["delta_bias"], delta_softplus=True))


def _flashssm_scan_step(w, inp: dict):
    import flashssm

    state = inp["state"].clone()
    args, kw = _scan_step_args(inp, state)
    return lambda: (flashssm.selective_scan_step(*args, **kw), state)


def _reference_scan_step(w, inp: dict):
    from flashssm.ops.selective_scan.reference import selective_scan_step_reference

    state = inp["state"].clone()
    args, kw = _scan_step_args(inp, state)
    return lambda: (selective_scan_step_reference(*args, **kw), state)


def _mamba_ssm_scan_step(w, inp: dict):
    if not inp["u"].is_cuda:
        raise Unavailable("mamba_ssm's Triton kernels need a CUDA GPU")
    fn = import_mamba_ssm("mamba_ssm.ops.triton.selective_state_update").selective_state_update
    state = inp["state"].clone()
    return lambda: (fn(state, inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"], D=inp["D"], z=inp["z"],
                       dt_bias=inp["delta_bias"], dt_softplus=True), state)


# ---- selective_scan (Mamba-1) ----

_SCAN_LOOP_LIMIT = 1 << 16  # tokens: the step-by-step PyTorch loops take minutes beyond


def _scan_kwargs(inp: dict) -> dict:
    return dict(D=inp["D"], z=inp["z"], delta_bias=inp["delta_bias"], delta_softplus=True)


def _no_packed_form(inp: dict, who: str) -> None:
    if inp.get("cu_seqlens") is not None:
        raise Unavailable(f"{who} has no packed-sequence (cu_seqlens) form")


def _require_scan_kernel(w, inp: dict) -> None:
    from flashssm.ops import selective_scan

    if not selective_scan.kernel_available(inp["u"], w.dstate):
        raise Unavailable("no flashssm Triton kernel for this device and shape (selective_scan would run the "
                          "reference)")


def _flashssm_scan(w, inp: dict):
    import flashssm

    _require_scan_kernel(w, inp)
    return lambda: flashssm.selective_scan(inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"], **_scan_kwargs(inp),
                                           cu_seqlens=inp.get("cu_seqlens"))


def _scan_step_fn(state, u, delta, A, B, C):
    """One token of the plain reference (delta already biased and softplus'd): the new state and <state, C>."""
    state = torch.exp(delta[..., None] * A) * state + (delta * u)[..., None] * B[:, None, :]
    return state, (state * C[:, None, :]).sum(-1)


def _torch_scan(compile: bool):
    """The plain step-by-step PyTorch scan in fp32; compiled, each step is one fused kernel (compiling
    the whole loop unrolls seqlen steps and does not finish in reasonable time)."""
    def setup(w, inp: dict):
        _no_packed_form(inp, "this plain loop")
        if w.tokens > _SCAN_LOOP_LIMIT:
            raise Unavailable(f"a step-by-step PyTorch loop over {w.tokens} tokens takes minutes")
        step = torch.compile(_scan_step_fn) if compile else _scan_step_fn

        def run():
            u = inp["u"].float()
            delta = F.softplus(inp["delta"].float() + inp["delta_bias"][:, None])
            B, C = inp["B"].float(), inp["C"].float()
            state = u.new_zeros(u.shape[0], u.shape[1], w.dstate)
            ys = []
            for t in range(u.shape[2]):
                state, y = step(state, u[..., t], delta[..., t], inp["A"], B[..., t], C[..., t])
                ys.append(y)
            y = torch.stack(ys, dim=-1) + inp["D"][:, None] * u
            return (y * F.silu(inp["z"].float())).to(inp["u"].dtype)
        return run
    return setup


def _flashssm_scan_fwd(w, inp: dict):
    import flashssm

    _require_scan_kernel(w, inp)
    cu = inp.get("cu_seqlens")
    return lambda u, delta, A, B, C, D, z, bias: flashssm.selective_scan(u, delta, A, B, C, D, z, bias, True,
                                                                         cu_seqlens=cu)


def flashssm_training_forward(w: Workload, inp: dict):
    """flashssm's forward of a training workload (the SSD scan's or the selective scan's), as the bench's training
    calls run it, and the names of the inputs it takes as leaves, in order."""
    if w.op == "ssd_scan_train":
        return _flashssm_fwd(w, inp), _TRAIN_INPUTS + w.extra_inputs
    return _flashssm_scan_fwd(w, inp), SCAN_TRAIN_INPUTS


def _reference_scan_fwd(w, inp: dict):
    from flashssm.ops.selective_scan.reference import selective_scan_reference

    if w.tokens > _SCAN_LOOP_LIMIT // 8:
        raise Unavailable(f"autograd through a step-by-step PyTorch loop over {w.tokens} tokens takes minutes")
    cu = inp.get("cu_seqlens")
    return lambda u, delta, A, B, C, D, z, bias: selective_scan_reference(u, delta, A, B, C, D, z, bias, True,
                                                                          cu_seqlens=cu)


def _mamba_ssm_scan_fn():
    """mamba_ssm's selective_scan_fn over its CUDA extension `selective_scan_cuda`, or Unavailable. The extension
    exists only where mamba_ssm was built from source with the CUDA toolkit (benchmarks/build_mamba_selective_scan.py
    builds it on the GPU machine); the empty stand-in that `import_mamba_ssm` puts in its place is replaced by the
    real one when that imports."""
    stand_in = sys.modules.get("selective_scan_cuda")
    if stand_in is not None and not hasattr(stand_in, "fwd"):
        del sys.modules["selective_scan_cuda"]
        sys.modules.pop("mamba_ssm.ops.selective_scan_interface", None)
    try:
        importlib.import_module("selective_scan_cuda")
    except Exception as err:  # (not built, or built against another torch: ImportError, OSError)
        if stand_in is not None:
            sys.modules["selective_scan_cuda"] = stand_in
        raise Unavailable(f"mamba_ssm's CUDA selective scan (selective_scan_cuda) is not built here: {err}") from None
    return import_mamba_ssm("mamba_ssm.ops.selective_scan_interface").selective_scan_fn


def _mamba_ssm_scan(w, inp: dict):
    _no_packed_form(inp, "mamba_ssm's CUDA selective scan")
    if not inp["u"].is_cuda:
        raise Unavailable("mamba_ssm's CUDA selective scan needs a CUDA GPU")
    fn = _mamba_ssm_scan_fn()
    return lambda: fn(inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"], **_scan_kwargs(inp))


def _mamba_ssm_scan_fwd(w, inp: dict):
    _no_packed_form(inp, "mamba_ssm's CUDA selective scan")
    if not inp["u"].is_cuda:
        raise Unavailable("mamba_ssm's CUDA selective scan needs a CUDA GPU")
    fn = _mamba_ssm_scan_fn()
    return lambda u, delta, A, B, C, D, z, bias: fn(u, delta, A, B, C, D, z, bias, True)


# ---- conv1d and gated RMSNorm ----

def _flashssm_conv(w, inp: dict):
    import flashssm

    return lambda: flashssm.causal_conv1d(inp["x"], inp["weight"], inp["bias"], "silu")


def _torch_conv_fn(x, weight, bias):
    """What a PyTorch user writes: a padded depthwise conv1d in the input dtype, cut to length, then SiLU."""
    width = weight.shape[1]
    y = torch.nn.functional.conv1d(x, weight.to(x.dtype)[:, None, :], bias.to(x.dtype), padding=width - 1,
                                   groups=x.shape[1])
    return torch.nn.functional.silu(y[..., :x.shape[-1]])


def _torch_conv(compile: bool):
    def setup(w, inp: dict):
        fn = torch.compile(_torch_conv_fn) if compile else _torch_conv_fn
        return lambda: fn(inp["x"], inp["weight"], inp["bias"])
    return setup


def _flashssm_norm(w, inp: dict):
    import flashssm

    return lambda: flashssm.rmsnorm_gated(inp["x"], inp["weight"], inp["z"], eps=1e-5, group_size=w.group_size)


def _torch_norm_fn(x, weight, z, group_size: int):
    """Plain PyTorch gated RMSNorm in fp32 (as mamba_ssm's reference computes it), output in x's dtype."""
    h = x.float() * torch.nn.functional.silu(z.float())
    g = h.reshape(*h.shape[:-1], -1, group_size)
    y = (g * torch.rsqrt(g.square().mean(-1, keepdim=True) + 1e-5)).reshape(h.shape) * weight
    return y.to(x.dtype)


def _torch_norm(compile: bool):
    def setup(w, inp: dict):
        fn = torch.compile(_torch_norm_fn) if compile else _torch_norm_fn
        return lambda: fn(inp["x"], inp["weight"], inp["z"], w.group_size)
    return setup


def _mamba_ssm_norm(w, inp: dict):
    if not inp["x"].is_cuda:
        raise Unavailable("mamba_ssm's Triton kernels need a CUDA GPU")
    fn = import_mamba_ssm("mamba_ssm.ops.triton.layernorm_gated").rmsnorm_fn
    return lambda: fn(inp["x"], inp["weight"], None, z=inp["z"], eps=1e-5, group_size=w.group_size,
                      norm_before_gate=False)


IMPLS: dict[str, dict[str, Impl]] = {
    op: {impl.name: impl for impl in impls} for op, impls in {
        "ssd_scan": [
            Impl("flashssm", False, "flashssm.ssd_scan, the fused Triton kernel, fp32 states", _flashssm(None), True),
            Impl("flashssm-fp16-states", False, "the same with state_dtype=torch.float16", _flashssm(torch.float16),
                 True),
            Impl("reference", False, "flashssm's chunked PyTorch reference, eager, fp32", _reference(False), True),
            Impl("reference-compiled", False, "the same, per-chunk part through torch.compile", _reference(True)),
            Impl("mamba_ssm", True, "mamba_ssm mamba_chunk_scan_combined (5 Triton kernels)", _mamba_ssm),
            Impl("fla", True, "fla chunk_simple_gla (B, C expanded per head)", _fla),
        ],
        "ssd_scan_train": [
            Impl("flashssm", False, "flashssm.ssd_scan forward + fused backward (float atomics for dB, dC)",
                 _train(_flashssm_fwd), True),
            Impl("flashssm-deterministic", False, "the same under torch.use_deterministic_algorithms(True)",
                 _train(_flashssm_fwd, True), True),
            Impl("reference", False, "flashssm's chunked PyTorch reference through autograd, fp32",
                 _train(_reference_fwd), True),
            Impl("mamba_ssm", True, "mamba_ssm mamba_chunk_scan_combined forward + backward", _train(_mamba_ssm_fwd)),
            Impl("fla", True, "fla chunk_simple_gla forward + backward (inputs prepared inside)", _train(_fla_fwd)),
        ],
        "ssd_step": [
            Impl("flashssm", False, "flashssm.ssd_step, one Triton launch, called from Python", _flashssm_step, True),
            Impl("flashssm-graph", False, "the same steps replayed from a CUDA graph (device time per step)",
                 _flashssm_step_graph),
            Impl("reference", False, "flashssm's PyTorch step reference, eager", _reference_step, True),
            Impl("mamba_ssm", True, "mamba_ssm selective_state_update (Triton), as Mamba2.step calls it",
                 _mamba_ssm_step),
        ],
        "selective_scan_step": [
            Impl("flashssm", False, "flashssm.selective_scan_step, one Triton launch", _flashssm_scan_step, True),
            Impl("reference", False, "flashssm's PyTorch step reference, eager", _reference_scan_step, True),
            Impl("mamba_ssm", True, "mamba_ssm selective_state_update (Triton)", _mamba_ssm_scan_step),
        ],
        "selective_scan": [
            Impl("flashssm", False, "flashssm.selective_scan, one fused Triton launch", _flashssm_scan, True),
            Impl("torch", True, "plain PyTorch, one token per step, fp32, eager", _torch_scan(False), True),
            Impl("torch-compiled", True, "the same with each step through torch.compile", _torch_scan(True)),
            Impl("mamba_ssm", True, "mamba_ssm selective_scan_fn (its CUDA extension, built from source)",
                 _mamba_ssm_scan),
        ],
        "selective_scan_train": [
            Impl("flashssm", False, "flashssm.selective_scan forward + fused backward",
                 _train(_flashssm_scan_fwd, inputs=SCAN_TRAIN_INPUTS), True),
            Impl("flashssm-deterministic", False, "the same under torch.use_deterministic_algorithms(True)",
                 _train(_flashssm_scan_fwd, True, SCAN_TRAIN_INPUTS), True),
            Impl("reference", True, "flashssm's step-by-step PyTorch reference through autograd, fp32",
                 _train(_reference_scan_fwd, inputs=SCAN_TRAIN_INPUTS), True),
            Impl("mamba_ssm", True, "mamba_ssm selective_scan_fn forward + backward (its CUDA extension)",
                 _train(_mamba_ssm_scan_fwd, inputs=SCAN_TRAIN_INPUTS)),
        ],
        "causal_conv1d": [
            Impl("flashssm", False, "flashssm.causal_conv1d, one Triton launch", _flashssm_conv, True),
            Impl("torch", True, "F.conv1d (padded, depthwise) + SiLU in the input dtype, eager", _torch_conv(False),
                 True),
            Impl("torch-compiled", True, "the same through torch.compile", _torch_conv(True)),
        ],
        "rmsnorm_gated": [
            Impl("flashssm", False, "flashssm.rmsnorm_gated, one Triton launch", _flashssm_norm, True),
            Impl("torch", True, "plain PyTorch gated RMSNorm in fp32, eager", _torch_norm(False), True),
            Impl("torch-compiled", True, "the same through torch.compile", _torch_norm(True)),
            Impl("mamba_ssm", True, "mamba_ssm rmsnorm_fn (Triton layernorm_gated)", _mamba_ssm_norm),
        ],
    }.items()
}
IMPL_NAMES = list(dict.fromkeys(name for impls in IMPLS.values() for name in impls))
