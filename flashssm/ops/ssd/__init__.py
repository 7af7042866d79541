"""Mamba-2's SSD scan (`ssd_scan`) and its one-token decoding step (`ssd_step`)."""

from __future__ import annotations

import math

import torch

from flashssm import _runtime
from flashssm.ops import step_ops
from flashssm.ops.checks import check_ssd_scan, check_ssd_step
from flashssm.ops.ssd import reference


def _kernel_blocker(x, dstate: int) -> str | None:
    """Why ssd_scan on inputs like x would not run the Triton kernel, or None if it would."""
    blocker = _runtime.device_blocker(x)
    if blocker is not None:
        return blocker
    from flashssm.ops.ssd.forward import supported  # imported late: the interpreter flag is read then

    return supported(dstate, x.device)


def _autograd():
    from flashssm.ops.ssd import autograd  # (imported late: the interpreter flag is read then)

    return autograd


def _signature(x, dt, A, B, C, D, z, dt_bias, initial_states, chunk_size, dt_softplus, dt_limit, return_final_states,
               state_dtype):
    """What ssd_scan's Python path reads of a call without packed sequences (`_runtime.Prepared`): each tensor's shape,
    strides, dtype, device and 16-byte alignment, and the options. None for a call it cannot say this of (an argument
    of a type the validation would refuse, an option equal to a valid one by value but not by type, as 1 to True):
    such a call takes the whole path, and its errors."""
    if (type(chunk_size) is not int or type(dt_softplus) is not bool or type(return_final_states) is not bool
            or type(dt_limit) is not tuple):
        return None
    return _runtime.call_signature("ssd_scan", (x, dt, A, B, C, D, z, dt_bias, initial_states),
                                   (chunk_size, dt_softplus, dt_limit, return_final_states, state_dtype))


# The shared memory one block may opt in to on Hopper, where the launches were sized (and under the interpreter)
HOPPER_SHARED_MEMORY = 227 * 1024


def training_blocker(dims, x) -> str | None:
    """Why a training call (forward and backward) on inputs like x does not run the kernels on x's GPU, or None. The
    forward that stores the states for the backward and the backward's sweeps each hold a chunk's whole state in fp32
    in shared memory, [dstate, headdim] padded to powers of two: 128 KB at dstate 256 x headdim 128, more than the 99
    KB an Ada, Ampere GA10x or consumer Blackwell GPU lets a block have (an A100 allows 163 KB, Hopper 227; compiled for
    sm_89 by `benchmarks/other_gpus.py`, fewer pipeline stages do not shrink it). Such a call takes the reference."""
    from flashssm.ops.ssd.forward import _block_n, states_block_p  # (imported late: the interpreter flag is read then)

    need = _block_n(dims.dstate) * states_block_p(dims.headdim) * 4
    have = _runtime.shared_memory(x.device, on_cpu=HOPPER_SHARED_MEMORY)
    if need <= have:
        return None
    return (f"training at dstate {dims.dstate} x headdim {dims.headdim} holds a {need // 1024} KB fp32 state in shared "
            f"memory, and this GPU lets a block have {have // 1024} KB")


def kernel_available(x, dstate: int) -> bool:
    """Whether `ssd_scan` on inputs like `x` with this dstate runs the Triton kernel (otherwise: the reference)."""
    return _kernel_blocker(x, dstate) is None


def ssd_scan(x, dt, A, B, C, *, chunk_size=256, D=None, z=None, dt_bias=None, dt_softplus=False,
             dt_limit=(0.0, math.inf), initial_states=None, cu_seqlens=None, return_final_states=False,
             state_dtype=None):
    """The Mamba-2 SSD scan (shared/SEMANTICS.md), with mamba_ssm's argument names.

    x: (batch, seqlen, nheads, headdim), fp32/fp16/bf16
    dt: (batch, seqlen, nheads), any float
    A: (nheads,), negative (not checked: it would cost a device synchronisation)
    B, C: (batch, seqlen, ngroups, dstate), dtype of x; head h reads group h // (nheads // ngroups)
    D: (nheads,) or (nheads, headdim); z: like x; dt_bias: (nheads,)
    dt_softplus, dt_limit: dt = clamp(softplus(dt + dt_bias), *dt_limit)
    initial_states: (num_seqs, nheads, headdim, dstate), fp32 or state_dtype
    cu_seqlens: (num_seqs + 1,) int32/int64 offsets of sequences packed along seqlen (batch == 1);
        on the CPU or x's device. Chunks never span two sequences and no state crosses them.
    state_dtype: fp32 (default), fp16 or bf16: precision of the states handed between chunks and
        of final_states. Arithmetic is fp32 whatever the input dtype.
    Returns y like x, or (y, final_states (num_seqs, nheads, headdim, dstate)) with
    return_final_states.

    Runs one fused Triton launch on a GPU of compute capability 8.0 or newer (or under
    TRITON_INTERPRET=1), and the chunked PyTorch reference otherwise, saying so once on a GPU.
    Differentiable: gradients reach every input and flow back from final_states (the backward's
    launches: ops/ssd/backward_chain.py). Under torch.compile it runs as the custom op
    `flashssm::ssd_scan_fwd` (no graph break); in eager mode through a plain autograd.Function with
    the same launches, which spares the custom op's dispatch. Deterministic (no float atomics) under
    `torch.use_deterministic_algorithms(True)`. A NaN or inf input makes the
    outputs it feeds NaN or inf; as in every chunked implementation, the earlier outputs of the
    same chunk and headdim column may turn NaN too.
    """
    # a call whose signature an earlier call recorded replays that call's allocations and launches
    # (`_runtime.Prepared`): its validation, dispatch and configuration gave the same answers then; a call with
    # gradients replays its forward's launches inside the autograd function (`SSDScanFunction`), under its own key
    key = train_key = None
    if _runtime.PREPARED and cu_seqlens is None and not torch.compiler.is_compiling():
        key = _signature(x, dt, A, B, C, D, z, dt_bias, initial_states, chunk_size, dt_softplus, dt_limit,
                         return_final_states, state_dtype)
        if key is not None and _runtime.wants_grad(x, dt, A, B, C, D, z, dt_bias, initial_states):
            key, train_key = None, (key, "training")
            plan = _runtime.prepared(train_key)
            if plan is not None:
                return _autograd().SSDScanFunction.apply(plan.extra, state_dtype, return_final_states, x, dt, A, B,
                                                         C, D, z, dt_bias, initial_states, dt_softplus, train_key,
                                                         plan)
        else:
            out = _runtime.replay(key, (x, dt, A, B, C, D, z, dt_bias, initial_states))
            if out is not None:
                return out if return_final_states else out[0]
    compiling = torch.compiler.is_compiling()
    check = lambda read: check_ssd_scan(  # noqa: E731
        x, dt, A, B, C, chunk_size=chunk_size, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus, dt_limit=dt_limit,
        initial_states=initial_states, cu_seqlens=cu_seqlens, return_final_states=return_final_states,
        state_dtype=state_dtype, read_offsets=read)
    dims = check(not compiling)  # (traced: the custom op reads the offsets when it runs; the trace has no values)
    blocker = _kernel_blocker(x, dims.dstate)
    if blocker is None and _runtime.needs_grad(x, dt, A, B, C, D, z, dt_bias, initial_states):
        blocker = training_blocker(dims, x)
    if blocker is not None and compiling and cu_seqlens is not None:
        dims = check(True)  # the reference needs them (a graph break)
    if blocker is None and compiling:
        # through the custom op: torch.compile sees one op, and autograd runs the fused backward
        from flashssm.ops.ssd.autograd import ssd_scan_fwd, state_dtype_name

        y, final_states, _ = ssd_scan_fwd(x, dt, A, B, C, D, z, dt_bias, initial_states, cu_seqlens, chunk_size,
                                          dt_softplus, float(dims.dt_limit[0]), float(dims.dt_limit[1]),
                                          return_final_states, state_dtype_name(state_dtype), z is not None)
    elif blocker is None and _runtime.needs_grad(x, dt, A, B, C, D, z, dt_bias, initial_states):
        # eager autograd: the same launches without the custom op's dispatch (hundreds of microseconds)
        out = _autograd().SSDScanFunction.apply(dims, state_dtype, return_final_states, x, dt, A, B, C, D, z,
                                                dt_bias, initial_states, dt_softplus, train_key, None)
        y, final_states = out if return_final_states else (out, None)
    elif blocker is None:
        from flashssm.ops.ssd.forward import prepared_switches, ssd_forward

        with _runtime.Recording(key, (x, dt, A, B, C, D, z, dt_bias, initial_states), prepared_switches) as rec:
            y, final_states = ssd_forward(dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                                          initial_states=initial_states, return_final_states=return_final_states,
                                          state_dtype=state_dtype)
            rec.outputs = (y, final_states)
    else:
        if x.is_cuda:
            _runtime.warn_reference_fallback("ssd_scan", blocker)
        y, final_states = reference.ssd_chunked_checked(
            dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
            initial_states=initial_states, state_dtype=state_dtype)
    return (y, final_states) if return_final_states else y


def step_blocker(x, dstate: int, *tensors) -> str | None:
    """Why ssd_step / selective_scan_step on inputs like x would not run the Triton kernel, or None."""
    blocker = _runtime.device_blocker(x)
    if blocker is None and _runtime.needs_grad(*tensors):
        blocker = "gradients through a decoding step run the reference"
    if blocker is None and dstate > 256:
        blocker = f"dstate {dstate} > 256"
    return blocker


def ssd_step(state, x, dt, A, B, C, D=None, z=None, dt_bias=None, dt_softplus=False, dt_limit=(0.0, math.inf),
             state_batch_indices=None, out=None):
    """One decoding step of the SSD recurrence; `state` is updated in place.

    state: (cache_batch, nheads, headdim, dstate), fp32/fp16/bf16 (may be a strided slice of a cache)
    x, z: (batch, nheads, headdim); dt: (batch, nheads); A, dt_bias: (nheads,)
    B, C: (batch, ngroups, dstate); D: (nheads,) or (nheads, headdim)
    state_batch_indices: (batch,) int32/int64 cache row of each batch row; a negative index marks a
        padding row: its state is untouched and its y is zero. Without it, batch == cache_batch.
        Its values are checked (a device synchronisation) except while a CUDA graph is captured.
    out: optional (batch, nheads, headdim) tensor of x's dtype to write y into.
    Returns y: (batch, nheads, headdim), dtype of x.

    One Triton launch (CUDA, or the CPU under TRITON_INTERPRET=1), with no host synchronisation and
    no allocation beyond y: safe to capture in a CUDA graph. The reference runs otherwise, and when
    gradients are needed. Traced by torch.compile, the kernel runs inside a custom op (`ops/step_ops.py`).
    """
    limit = check_ssd_step(state, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                           dt_limit=dt_limit, state_batch_indices=state_batch_indices, out=out)
    blocker = step_blocker(x, state.shape[3], state, x, dt, A, B, C, D, z, dt_bias)
    if blocker is None and step_ops.compiled_form():  # traced by torch.compile: the kernel inside a custom op
        y = out if out is not None else torch.empty(x.shape, dtype=x.dtype, device=x.device)
        step_ops.ssd_step_op(state, x, dt, A, B, C, D, z, dt_bias, dt_softplus, float(limit[0]), float(limit[1]),
                             state_batch_indices, y)
        return y
    if blocker is None:
        from flashssm.ops.ssd.step import ssd_step_kernel

        with _runtime.on_device(x.device):
            return ssd_step_kernel(limit, state, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                                   state_batch_indices=state_batch_indices, out=out)
    if x.is_cuda:
        _runtime.warn_reference_fallback("ssd_step", blocker)
    return reference.ssd_step_checked(limit, state, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias,
                                      dt_softplus=dt_softplus, state_batch_indices=state_batch_indices, out=out)


__all__ = ["ssd_scan", "ssd_step", "kernel_available"]
