"""rmsnorm_gated and add_rmsnorm as `torch.library` custom ops (`flashssm::rmsnorm_gated_fwd` / `_bwd`,
`flashssm::add_rmsnorm_fwd` / `_bwd`) with fake implementations and registered autograd formulas: a form torch.compile
keeps opaque (Inductor calls the op; it does not trace the Triton launches, whose strides the trace would fix, into
its graph). Which form a traced call takes: `rmsnorm.COMPILE_FORM`.

The ops return tensors only: an absent z's gradient is an empty tensor. Every output is contiguous (as the kernels'
launches allocate them)."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


@torch.library.custom_op("flashssm::rmsnorm_gated_fwd", mutates_args=())
def rmsnorm_gated_fwd(x: Tensor, weight: Tensor, z: Optional[Tensor], eps: float, group_size: int,
                      norm_before_gate: bool, out_dtype: Optional[torch.dtype]) -> Tensor:
    from flashssm.ops.norm.rmsnorm import rmsnorm_forward

    return rmsnorm_forward(x, weight, z, eps, group_size, norm_before_gate, out_dtype=out_dtype)


@rmsnorm_gated_fwd.register_fake
def _(x, weight, z, eps, group_size, norm_before_gate, out_dtype):
    return x.new_empty(x.shape, dtype=out_dtype or x.dtype)


@torch.library.custom_op("flashssm::rmsnorm_gated_bwd", mutates_args=())
def rmsnorm_gated_bwd(dy: Tensor, x: Tensor, weight: Tensor, z: Optional[Tensor], eps: float, group_size: int,
                      norm_before_gate: bool) -> list[Tensor]:
    """[dx, dz or empty, dweight]."""
    from flashssm.ops.norm.rmsnorm import rmsnorm_backward

    dx, dz, dw = rmsnorm_backward(x, weight, z, dy, eps, group_size, norm_before_gate)
    return [dx, dz if dz is not None else x.new_empty(0), dw]


@rmsnorm_gated_bwd.register_fake
def _(dy, x, weight, z, eps, group_size, norm_before_gate):
    return [x.new_empty(x.shape), z.new_empty(z.shape) if z is not None else x.new_empty(0),
            weight.new_empty(weight.shape)]


def _gated_setup(ctx, inputs, output):
    x, weight, z, eps, group_size, norm_before_gate, _ = inputs
    ctx.save_for_backward(x, weight, z)
    ctx.config = (eps, group_size, norm_before_gate)


def _gated_backward(ctx, dy):
    x, weight, z = ctx.saved_tensors
    dx, dz, dw = rmsnorm_gated_bwd(dy, x, weight, z, *ctx.config)
    need = ctx.needs_input_grad
    return (dx if need[0] else None, dw if need[1] else None, dz if z is not None and need[2] else None,
            None, None, None, None)


torch.library.register_autograd("flashssm::rmsnorm_gated_fwd", _gated_backward, setup_context=_gated_setup)


@torch.library.custom_op("flashssm::add_rmsnorm_fwd", mutates_args=())
def add_rmsnorm_fwd(hidden: Tensor, residual: Tensor, weight: Tensor, eps: float, residual_dtype: torch.dtype,
                    out_dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """(y, s = hidden + residual in residual_dtype)."""
    from flashssm.ops.norm.rmsnorm import rmsnorm_forward

    return rmsnorm_forward(hidden, weight, None, eps, hidden.shape[-1], False, out_dtype=out_dtype,
                           residual=residual, residual_dtype=residual_dtype)


@add_rmsnorm_fwd.register_fake
def _(hidden, residual, weight, eps, residual_dtype, out_dtype):
    return hidden.new_empty(hidden.shape, dtype=out_dtype), hidden.new_empty(hidden.shape, dtype=residual_dtype)


@torch.library.custom_op("flashssm::add_rmsnorm_bwd", mutates_args=())
def add_rmsnorm_bwd(dy: Tensor, ds: Tensor, weight: Tensor, s: Tensor, eps: float, hidden_dtype: torch.dtype,
                    residual_dtype: torch.dtype) -> list[Tensor]:
    """[d hidden, d residual, dweight]."""
    from flashssm.ops.norm.rmsnorm import rmsnorm_backward

    dx, _, dw, dh = rmsnorm_backward(s, weight, None, dy, eps, s.shape[-1], False, dres=ds, dh_dtype=hidden_dtype)
    return [dh, dx if dx.dtype == residual_dtype else dx.to(residual_dtype), dw]


@add_rmsnorm_bwd.register_fake
def _(dy, ds, weight, s, eps, hidden_dtype, residual_dtype):
    return [s.new_empty(s.shape, dtype=hidden_dtype), s.new_empty(s.shape, dtype=residual_dtype),
            weight.new_empty(weight.shape)]


def _add_setup(ctx, inputs, output):
    hidden, residual, weight, eps, residual_dtype, out_dtype = inputs
    ctx.save_for_backward(weight, output[1])
    ctx.config = (eps, hidden.dtype, residual.dtype)


def _add_backward(ctx, dy, ds):
    weight, s = ctx.saved_tensors
    if dy is None:
        dy = torch.zeros_like(s)
    if ds is None:
        ds = torch.zeros_like(s)
    dh, dres, dw = add_rmsnorm_bwd(dy, ds, weight, s, *ctx.config)
    need = ctx.needs_input_grad
    return dh if need[0] else None, dres if need[1] else None, dw if need[2] else None, None, None, None


torch.library.register_autograd("flashssm::add_rmsnorm_fwd", _add_backward, setup_context=_add_setup)
