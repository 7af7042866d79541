"""causal_conv1d as `torch.library` custom ops (`flashssm::causal_conv1d_fwd`, `flashssm::causal_conv1d_bwd`) with fake
implementations and a registered autograd formula: a form torch.compile keeps opaque (Inductor calls the op; it does
not trace the Triton launches into its graph), as ssd_scan's and selective_scan's ops are. Which form a traced call
takes: `conv.COMPILE_FORM`.

The ops take causal_conv1d's arguments with the activation as a flag; they return tensors only: absent final states
or gradients are empty tensors.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def _dims(x, weight, bias, initial_states, cu_seqlens, silu, return_final_states):
    from flashssm.ops.checks import check_causal_conv1d

    return check_causal_conv1d(x, weight, bias, "silu" if silu else None, cu_seqlens=cu_seqlens,
                               initial_states=initial_states, return_final_states=return_final_states,
                               allow_float64=True)


@torch.library.custom_op("flashssm::causal_conv1d_fwd", mutates_args=())
def causal_conv1d_fwd(x: Tensor, weight: Tensor, bias: Optional[Tensor], initial_states: Optional[Tensor],
                      cu_seqlens: Optional[Tensor], silu: bool, return_final_states: bool) -> tuple[Tensor, Tensor]:
    """(y like x, final states or empty)."""
    from flashssm.ops.conv1d.conv import conv1d_forward

    dims = _dims(x, weight, bias, initial_states, cu_seqlens, silu, return_final_states)
    y, final = conv1d_forward(dims, x, weight, bias, initial_states, return_final_states)
    return y, final if final is not None else x.new_empty(0)


@causal_conv1d_fwd.register_fake
def _(x, weight, bias, initial_states, cu_seqlens, silu, return_final_states):
    num_seqs = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else x.shape[0]
    # y in x's layout where x is dense, else contiguous (`_runtime.empty_like`, torch.empty_like's rule)
    final = x.new_empty((num_seqs, x.shape[1], weight.shape[1] - 1)) if return_final_states else x.new_empty(0)
    return torch.empty_like(x), final


@torch.library.custom_op("flashssm::causal_conv1d_bwd", mutates_args=())
def causal_conv1d_bwd(dy: Tensor, dfinal: Optional[Tensor], x: Tensor, weight: Tensor, bias: Optional[Tensor],
                      initial_states: Optional[Tensor], cu_seqlens: Optional[Tensor], silu: bool,
                      need_dinit: bool) -> list[Tensor]:
    """[dx like x, dweight (contiguous), dbias or empty, dinitial_states or empty]."""
    from flashssm.ops.conv1d.conv import conv1d_backward

    dims = _dims(x, weight, bias, initial_states, cu_seqlens, silu, dfinal is not None)
    dx, dweight, dbias, dinit = conv1d_backward(dims, x, weight, bias, initial_states, dy, dfinal, need_dinit)
    return [dx, dweight.contiguous(), dbias if dbias is not None else x.new_empty(0),
            dinit if dinit is not None else x.new_empty(0)]


@causal_conv1d_bwd.register_fake
def _(dy, dfinal, x, weight, bias, initial_states, cu_seqlens, silu, need_dinit):
    dinit = (initial_states.new_empty(initial_states.shape) if need_dinit and initial_states is not None
             else x.new_empty(0))
    return [torch.empty_like(x), weight.new_empty(weight.shape), bias.new_empty(bias.shape) if bias is not None
            else x.new_empty(0), dinit]


def _setup_context(ctx, inputs, output):
    x, weight, bias, initial_states, cu_seqlens, silu, return_final_states = inputs
    ctx.save_for_backward(x, weight, bias, initial_states, cu_seqlens)
    ctx.silu, ctx.return_final_states = silu, return_final_states


def _backward(ctx, dy, dfinal):
    x, weight, bias, initial_states, cu_seqlens = ctx.saved_tensors
    if not ctx.return_final_states or dfinal is None or dfinal.numel() == 0:
        dfinal = None
    if dy is None:
        dy = torch.zeros_like(x)
    need_dinit = bool(ctx.needs_input_grad[3]) and initial_states is not None
    dx, dweight, dbias, dinit = causal_conv1d_bwd(dy, dfinal, x, weight, bias, initial_states, cu_seqlens, ctx.silu,
                                                  need_dinit)
    return (dx if ctx.needs_input_grad[0] else None, dweight if ctx.needs_input_grad[1] else None,
            dbias if bias is not None and ctx.needs_input_grad[2] else None, dinit if need_dinit else None,
            None, None, None)


torch.library.register_autograd("flashssm::causal_conv1d_fwd", _backward, setup_context=_setup_context)
