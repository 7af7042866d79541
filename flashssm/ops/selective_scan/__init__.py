"""Mamba-1's selective scan (`selective_scan`) and its one-token decoding step (`selective_scan_step`)."""

from __future__ import annotations

import torch

from flashssm import _runtime
from flashssm.ops import step_ops
from flashssm.ops.checks import check_selective_scan, check_selective_scan_step
from flashssm.ops.selective_scan import reference


def _kernel_blocker(u, dstate: int) -> str | None:
    """Why selective_scan on inputs like u would not run the Triton kernels, or None if it would."""
    blocker = _runtime.device_blocker(u)
    if blocker is not None:
        return blocker
    from flashssm.ops.selective_scan.scan import supported  # imported late: the interpreter flag is read then

    return supported(dstate)


def _switches() -> tuple:
    """The scan module's switches and tuning constants, which its forward's Python reads: a prepared call replays only
    while they keep their values."""
    from flashssm.ops.selective_scan import scan

    return _runtime.module_switches(scan)


def kernel_available(u, dstate: int) -> bool:
    """Whether `selective_scan` on inputs like `u` runs the Triton kernels (otherwise: the reference)."""
    return _kernel_blocker(u, dstate) is None


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False, *, cu_seqlens=None):
    """Mamba-1's selective scan (shared/SEMANTICS.md), with mamba_ssm's argument names.

    u, delta, z: (batch, dim, seqlen); u and z fp32/fp16/bf16, delta any float
    A: (dim, dstate), real, dstate <= 256; B, C: (batch, dstate, seqlen) shared by all channels, or
        (batch, ngroups, dstate, seqlen) with channel d reading group d // (dim // ngroups)
    D, delta_bias: (dim,)
    cu_seqlens: optional (num_seqs + 1,) int32/int64 offsets of sequences packed along seqlen
        (batch 1); every sequence starts from a zero state and nothing, forward or gradient,
        crosses a boundary.
    Returns y (batch, dim, seqlen) in u's dtype, or (y, last_state (batch or num_seqs, dim, dstate) fp32). On the
    kernels' path y (and the gradients of u, delta and z) keep u's layout: channels contiguous where u's are (stride 1
    along dim, as the Mamba-1 mixer's transposed views), else tokens contiguous.

    On CUDA: one fused Triton launch forward; differentiable through a fused one-launch backward
    that recomputes the states from the ones the forward keeps every few dozen tokens (under
    torch.compile a `torch.library` custom op, traced without a graph break; in eager mode a plain
    autograd.Function with the same launches). Elsewhere: the plain-PyTorch reference.
    """
    # a call whose signature an earlier one recorded replays that call's allocations, launches and torch calls
    # (`_runtime.Prepared`): its validation, dispatch and configuration gave the same answers then; a call with
    # gradients replays its forward inside the autograd function (`SelectiveScanFunction`), under its own key, and
    # its backward there too
    key = train_key = None
    if (_runtime.PREPARED and cu_seqlens is None and type(delta_softplus) is bool and type(return_last_state) is bool
            and not torch.compiler.is_compiling()):
        # (the flags' types too: a value equal to True but not a bool must meet the validation's error)
        key = _runtime.call_signature("selective_scan", (u, delta, A, B, C, D, z, delta_bias),
                                      (delta_softplus, return_last_state))
        if key is not None and _runtime.wants_grad(u, delta, A, B, C, D, z, delta_bias):
            key, train_key = None, (key, "training")
            plan = _runtime.prepared(train_key)
            if plan is not None:
                from flashssm.ops.selective_scan.autograd import SelectiveScanFunction

                return SelectiveScanFunction.apply(None, plan.extra, return_last_state, u, delta, A, B, C, D, z,
                                                   delta_bias, delta_softplus, None, train_key, plan)
        else:
            out = _runtime.replay(key, (u, delta, A, B, C, D, z, delta_bias))
            if out is not None:
                return out if return_last_state else out[0]
    traced = torch.compiler.is_compiling()
    check = lambda read: check_selective_scan(  # noqa: E731
        u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias, delta_softplus=delta_softplus,
        return_last_state=return_last_state, cu_seqlens=cu_seqlens, read_offsets=read)
    cu = check(not traced)  # (traced: the custom op reads the offsets when it runs; the trace has no values)
    blocker = _kernel_blocker(u, A.shape[1])
    if blocker is not None and traced and cu_seqlens is not None:
        cu = check(True)  # the reference needs them (a graph break)
    if blocker is None:
        grad = _runtime.needs_grad(u, delta, A, B, C, D, z, delta_bias)
        compiling = torch.compiler.is_compiling()
        num_seqs = None if cu is None else len(cu) - 1
        ckpt_tile = 0
        if grad:  # the forward keeps the states the backward's chunks start from
            from flashssm.ops.selective_scan.scan import backward_config, backward_config_uncached

            ngroups = 1 if B.dim() == 3 else B.shape[1]
            pick = backward_config_uncached if compiling else backward_config
            ckpt_tile = pick(u.shape[0], u.shape[1], A.shape[1], ngroups, u.shape[2],
                             _runtime.sm_count(u.device, on_cpu=4), u.element_size()).chunk
        if compiling:
            # through the custom op: torch.compile sees one op, and autograd runs the fused backward
            from flashssm.ops.selective_scan.autograd import selective_scan_fwd

            y, last, _ = selective_scan_fwd(u, delta, A, B, C, D, z, delta_bias, cu_seqlens, bool(delta_softplus),
                                            bool(return_last_state), ckpt_tile)
        elif grad:
            # eager autograd: the same launches without the custom op's dispatch
            from flashssm.ops.selective_scan.autograd import SelectiveScanFunction

            return SelectiveScanFunction.apply(cu, ckpt_tile, bool(return_last_state), u, delta, A, B, C, D, z,
                                               delta_bias, bool(delta_softplus), cu_seqlens, train_key, None)
        else:
            from flashssm.ops.selective_scan.scan import scan_forward, sequence_index

            seq_index = None if cu_seqlens is None else sequence_index(cu_seqlens.to(u.device), u.shape[2])
            with _runtime.on_device(u.device), _runtime.Recording(key, (u, delta, A, B, C, D, z, delta_bias),
                                                                  _switches, ops=True) as rec:
                y, last, _ = scan_forward(u, delta, A, B, C, D, z, delta_bias, delta_softplus, seq_index=seq_index,
                                          num_seqs=num_seqs, return_last_state=return_last_state, offsets=cu)
                rec.outputs = (y, last)
        return (y, last) if return_last_state else y
    if u.is_cuda:
        _runtime.warn_reference_fallback("selective_scan", blocker)
    return reference.selective_scan_checked(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                            delta_softplus=delta_softplus, return_last_state=return_last_state, cu=cu)


def selective_scan_step(state, u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                        state_batch_indices=None, out=None):
    """One decoding step of the selective scan; `state` is updated in place.

    state: (cache_batch, dim, dstate), fp32/fp16/bf16; u, delta, z: (batch, dim); A: (dim, dstate);
    B, C: (batch, dstate) or (batch, ngroups, dstate); D, delta_bias: (dim,)
    state_batch_indices: (batch,) int32/int64 cache row of each batch row; negative marks a padding
        row (state untouched, y zero). Without it, batch == cache_batch. Its values are checked (a
        device synchronisation) except while a CUDA graph is captured.
    out: optional (batch, dim) tensor of u's dtype to write y into.
    Returns y: (batch, dim), dtype of u.

    One Triton launch, CUDA-graph safe (no host synchronisation, no allocation beyond y); the
    reference runs without a GPU or interpreter, and when gradients are needed. Traced by torch.compile,
    the kernel runs inside a custom op (`ops/step_ops.py`).
    """
    check_selective_scan_step(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                              delta_softplus=delta_softplus, state_batch_indices=state_batch_indices, out=out)
    from flashssm.ops.ssd import step_blocker

    blocker = step_blocker(u, state.shape[2], state, u, delta, A, B, C, D, z, delta_bias)
    if blocker is None and step_ops.compiled_form():  # traced by torch.compile: the kernel inside a custom op
        y = out if out is not None else torch.empty(u.shape, dtype=u.dtype, device=u.device)
        step_ops.selective_scan_step_op(state, u, delta, A, B, C, D, z, delta_bias, delta_softplus,
                                        state_batch_indices, y)
        return y
    if blocker is None:
        from flashssm.ops.selective_scan.step import selective_scan_step_kernel

        with _runtime.on_device(u.device):
            return selective_scan_step_kernel(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                              delta_softplus=delta_softplus,
                                              state_batch_indices=state_batch_indices, out=out)
    if u.is_cuda:
        _runtime.warn_reference_fallback("selective_scan_step", blocker)
    return reference.selective_scan_step_checked(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                                 delta_softplus=delta_softplus,
                                                 state_batch_indices=state_batch_indices, out=out)


__all__ = ["selective_scan", "selective_scan_step", "kernel_available"]
