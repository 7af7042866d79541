"""Causal depthwise conv1d (`causal_conv1d`) and its one-token update (`causal_conv1d_update`),
with the argument names of the causal-conv1d package that mamba_ssm calls."""

from __future__ import annotations

import torch

from flashssm import _runtime
from flashssm.ops import step_ops
from flashssm.ops.checks import check_causal_conv1d, check_causal_conv1d_update
from flashssm.ops.conv1d import reference


def _switches() -> tuple:
    """The conv1d module's switches and tuning constants, which its forward's Python reads (`_runtime.Prepared`)."""
    from flashssm.ops.conv1d import conv

    return _runtime.module_switches(conv)


def _compile_form() -> str:
    """The form a call takes: "kernel" outside torch.compile's tracing, `conv.COMPILE_FORM` inside it."""
    if not torch.compiler.is_compiling():
        return "kernel"
    from flashssm.ops.conv1d import conv

    return conv.COMPILE_FORM


def causal_conv1d(x, weight, bias=None, activation=None, *, cu_seqlens=None, initial_states=None,
                  return_final_states=False):
    """Causal depthwise conv1d over the sequence, optionally followed by SiLU.

    x: (batch, dim, seqlen), fp32/fp16/bf16, either layout: channels contiguous (Mamba-2's
        `xBC.transpose(1, 2)`) or tokens contiguous; y keeps x's layout.
    weight: (dim, width), width 2, 3 or 4 (nn.Conv1d's (dim, 1, width) weight `.squeeze(1)`).
    bias: (dim,); activation: None, 'silu' or 'swish'.
    cu_seqlens: (num_seqs + 1,) offsets of sequences packed along seqlen (batch 1): no input
        crosses a boundary.
    initial_states: (num_seqs, dim, width − 1), the inputs before each sequence (zeros without).
    Returns y (batch, dim, seqlen) like x, or (y, final_states (num_seqs, dim, width − 1)): each
    sequence's last width − 1 inputs, to continue it with `causal_conv1d_update` (a cache of
    state_len >= width − 1 takes them in its last width − 1 columns).

    Forward and backward are Triton kernels (CUDA, or the CPU under TRITON_INTERPRET=1), with
    gradients for x, weight, bias and initial_states, and through final_states. While torch.compile
    traces a call, the same kernels run inside `torch.library` custom ops (`conv.COMPILE_FORM`).
    """
    # a call without gradients whose signature an earlier one recorded replays that call's steps (`_runtime.Prepared`)
    key = None
    if (_runtime.PREPARED and cu_seqlens is None and type(return_final_states) is bool
            and (activation is None or type(activation) is str) and not torch.compiler.is_compiling()
            and not _runtime.wants_grad(x, weight, bias, initial_states)):
        key = _runtime.call_signature("causal_conv1d", (x, weight, bias, initial_states),
                                      (activation, return_final_states))
        out = _runtime.replay(key, (x, weight, bias, initial_states))
        if out is not None:
            return out if return_final_states else out[0]
    form = _compile_form()
    check = lambda read: check_causal_conv1d(  # noqa: E731
        x, weight, bias, activation, cu_seqlens=cu_seqlens, initial_states=initial_states,
        return_final_states=return_final_states, read_offsets=read)
    dims = check(form != "custom_op")  # (the custom op reads the offsets when it runs; the trace has no values)
    blocker = _runtime.device_blocker(x)
    if blocker is not None and form == "custom_op" and cu_seqlens is not None:
        dims = check(True)  # the reference needs them (a graph break)
    if blocker is None and form == "custom_op":
        from flashssm.ops.conv1d.autograd import causal_conv1d_fwd

        y, final = causal_conv1d_fwd(x, weight, bias, initial_states, cu_seqlens, dims.silu, return_final_states)
        return (y, final) if return_final_states else y
    if blocker is None and form == "kernel":
        from flashssm.ops.conv1d.conv import CausalConv1dFn

        with _runtime.Recording(key, (x, weight, bias, initial_states), _switches, ops=True) as rec:
            out = CausalConv1dFn.apply(x, weight, bias, initial_states, dims, return_final_states)
            rec.outputs = out if return_final_states else (out, None)
        return out
    if x.is_cuda and blocker is not None:
        _runtime.warn_reference_fallback("causal_conv1d", blocker)
    y, final = reference.conv1d_checked(dims, x, weight, bias, initial_states)
    return (y, final) if return_final_states else y


def causal_conv1d_update(x, conv_state, weight, bias=None, activation=None, *, conv_state_indices=None, out=None):
    """Decoding: the conv for new token(s), rolling `conv_state` in place.

    x: (batch, dim) one token, or (batch, dim, seqlen) a few; conv_state: (cache_batch, dim,
    state_len) with state_len >= width − 1, any strides (mamba_ssm's Mamba2 uses state_len = width,
    channels contiguous): the inputs seen so far, newest last; it is shifted left by seqlen and the
    new inputs appended. conv_state_indices: (batch,) cache row of each batch row; negative marks
    a padding row (state untouched, y zero); its values are checked except during CUDA graph capture.
    out: optional output like x. One launch, no host synchronisation: CUDA-graph safe; traced by
    torch.compile, the kernel runs inside a custom op (`ops/step_ops.py`).
    Returns y like x.
    """
    _, silu = check_causal_conv1d_update(x, conv_state, weight, bias, activation,
                                         conv_state_indices=conv_state_indices, out=out)
    blocker = _runtime.device_blocker(x)
    if blocker is None and _runtime.needs_grad(x, conv_state, weight, bias):
        blocker = "gradients through a decoding step run the reference"
    if blocker is None and step_ops.compiled_form():  # traced by torch.compile: the kernel inside a custom op
        y = out if out is not None else torch.empty(x.shape, dtype=x.dtype, device=x.device)
        step_ops.causal_conv1d_update_op(x, conv_state, weight, bias, silu, conv_state_indices, y)
        return y
    if blocker is None:
        from flashssm.ops.conv1d.conv import conv1d_update

        return conv1d_update(x, conv_state, weight, bias, silu, conv_state_indices=conv_state_indices, out=out)
    if x.is_cuda:
        _runtime.warn_reference_fallback("causal_conv1d_update", blocker)
    return reference.conv1d_update_checked(x, conv_state, weight, bias, silu, conv_state_indices=conv_state_indices,
                                           out=out)


__all__ = ["causal_conv1d", "causal_conv1d_update"]
