"""Gated RMSNorm (`rmsnorm_gated`), as Mamba-2 applies it to the scan's output."""

from __future__ import annotations

import torch

from flashssm import _runtime
from flashssm.ops.checks import check_dtype_arg, check_rmsnorm_gated
from flashssm.ops.norm import reference


def _switches() -> tuple:
    """The norm module's switches and tuning constants, which its forward's Python reads (`_runtime.Prepared`)."""
    from flashssm.ops.norm import rmsnorm

    return _runtime.module_switches(rmsnorm)


def _compile_form() -> str:
    """The form a call takes: "kernel" outside torch.compile's tracing, `rmsnorm.COMPILE_FORM` inside it."""
    if not torch.compiler.is_compiling():
        return "kernel"
    from flashssm.ops.norm import rmsnorm

    return rmsnorm.COMPILE_FORM


def rmsnorm_gated(x, weight, z=None, *, eps=1e-6, group_size=None, norm_before_gate=False, out_dtype=None):
    """RMSNorm with an optional SiLU gate, per group of channels.

    x, z: (..., dim), fp32/fp16/bf16 (z like x); weight: (dim,); group_size: divides dim (default
    dim; Mamba-2 uses dim // ngroups). norm_before_gate=False (Mamba-2's default) normalises
    x · silu(z); True normalises x, then multiplies by silu(z). eps inside the square root.
    Returns y like x (contiguous), in x's dtype or in out_dtype (fp32, fp16 or bf16): the fp32 result rounded once
    to it (a model under autocast hands its Linear the bf16 autocast would cast to, with no cast launch forward or
    backward; the backward takes dy in y's dtype and returns dx, dz in the inputs').

    One Triton launch forward; one launch backward (plus a small fixed-order sum of the weight
    gradient's per-program partials), with gradients for x, z and weight. Runs on CUDA or under
    TRITON_INTERPRET=1; the reference otherwise.
    """
    # a call without gradients whose signature an earlier one recorded replays that call's steps (`_runtime.Prepared`)
    key = None
    if (_runtime.PREPARED and type(eps) is float and (group_size is None or type(group_size) is int)
            and type(norm_before_gate) is bool and not torch.compiler.is_compiling()
            and not _runtime.wants_grad(x, weight, z)):
        key = _runtime.call_signature("rmsnorm_gated", (x, weight, z), (eps, group_size, norm_before_gate, out_dtype))
        out = _runtime.replay(key, (x, weight, z))
        if out is not None:
            return out[0]
    group = check_rmsnorm_gated(x, weight, z, eps=eps, group_size=group_size, norm_before_gate=norm_before_gate,
                                out_dtype=out_dtype)
    why = _runtime.device_blocker(x)
    if why is None and group > 65536:
        why = f"group_size {group} > 65536"
    form = _compile_form()
    if why is None and form == "custom_op":
        from flashssm.ops.norm.autograd import rmsnorm_gated_fwd

        return rmsnorm_gated_fwd(x, weight, z, float(eps), group, norm_before_gate, out_dtype)
    if why is None and form == "kernel":
        from flashssm.ops.norm.rmsnorm import RMSNormGatedFn

        with _runtime.Recording(key, (x, weight, z), _switches, ops=True) as rec:
            y = RMSNormGatedFn.apply(x, weight, z, float(eps), group, norm_before_gate, out_dtype)
            rec.outputs = (y,)
        return y
    if x.is_cuda and why is not None:
        _runtime.warn_reference_fallback("rmsnorm_gated", why)
    return reference.rmsnorm_gated_checked(x, weight, z, eps=eps, group_size=group, norm_before_gate=norm_before_gate,
                                           out_dtype=out_dtype)


def add_rmsnorm(hidden, residual, weight, *, eps=1e-6, residual_dtype=None, out_dtype=None):
    """A pre-norm block's residual add and its RMSNorm together: returns (y, s) with s = hidden + residual, formed in
    fp32 and stored in residual_dtype (default hidden and residual's promoted dtype), and y = s / sqrt(mean(s²) + eps)
    · weight over the whole width, from s as stored, in out_dtype (default s's). The same values as
    `s = (hidden + residual).to(residual_dtype); y = rmsnorm_gated(s, weight, eps=eps, out_dtype=out_dtype)`, in one
    launch forward and one backward (mamba_ssm's fused add + norm): the backward adds the gradient reaching s from
    later uses to the norm's, and writes hidden's gradient in its dtype and residual's in its own.

    hidden, residual: (..., dim) fp32/fp16/bf16; weight: (dim,). Runs on CUDA or under TRITON_INTERPRET=1; the
    composition of references otherwise."""
    check_rmsnorm_gated(hidden, weight, None, eps=eps, out_dtype=out_dtype)
    if not isinstance(residual, torch.Tensor) or residual.shape != hidden.shape:
        got = tuple(residual.shape) if isinstance(residual, torch.Tensor) else type(residual).__name__
        raise ValueError(f"residual must be a tensor of hidden's shape {tuple(hidden.shape)}, got {got}")
    if residual.device != hidden.device:  # (before the check below, whose message would name the weight)
        raise ValueError(f"residual must be on hidden's device {hidden.device}, got {residual.device}")
    check_rmsnorm_gated(residual, weight, None, eps=eps)
    check_dtype_arg("residual_dtype", residual_dtype)
    residual_dtype = torch.promote_types(hidden.dtype, residual.dtype) if residual_dtype is None else residual_dtype
    out_dtype = residual_dtype if out_dtype is None else out_dtype
    why = _runtime.device_blocker(hidden)
    if why is None and hidden.shape[-1] > 65536:
        why = f"dim {hidden.shape[-1]} > 65536"
    form = _compile_form()
    if why is None and form == "custom_op":
        from flashssm.ops.norm.autograd import add_rmsnorm_fwd

        return add_rmsnorm_fwd(hidden, residual, weight, float(eps), residual_dtype, out_dtype)
    if why is None and form == "kernel":
        from flashssm.ops.norm.rmsnorm import AddRMSNormFn

        return AddRMSNormFn.apply(hidden, residual, weight, float(eps), residual_dtype, out_dtype)
    if hidden.is_cuda and why is not None:
        _runtime.warn_reference_fallback("add_rmsnorm", why)
    s = (hidden.float() + residual.float()).to(residual_dtype)
    return reference.rmsnorm_gated_checked(s, weight, eps=eps, group_size=s.shape[-1], norm_before_gate=False,
                                           out_dtype=out_dtype), s


__all__ = ["add_rmsnorm", "rmsnorm_gated"]
