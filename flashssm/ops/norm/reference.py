"""Plain-PyTorch gated RMSNorm: the definition the Triton kernels are tested against.

Within each group of `group_size` channels (the whole width by default):
    norm_before_gate=False (Mamba-2's):  h = x · silu(z);  y = h / sqrt(mean(h²) + eps) · weight
    norm_before_gate=True:               y = x / sqrt(mean(x²) + eps) · weight · silu(z)
Without z there is no gate. Arithmetic in fp32 (float64 for float64 inputs); y in x's dtype, or out_dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from flashssm.ops.checks import check_rmsnorm_gated


def rmsnorm_gated_reference(x, weight, z=None, *, eps=1e-6, group_size=None, norm_before_gate=False, out_dtype=None):
    """x, z: (..., dim); weight: (dim,). Returns y like x (in out_dtype if given)."""
    group = check_rmsnorm_gated(x, weight, z, eps=eps, group_size=group_size, norm_before_gate=norm_before_gate,
                                allow_float64=True, out_dtype=out_dtype)
    return rmsnorm_gated_checked(x, weight, z, eps=eps, group_size=group, norm_before_gate=norm_before_gate,
                                 out_dtype=out_dtype)


def rmsnorm_gated_checked(x, weight, z=None, *, eps, group_size: int, norm_before_gate: bool, out_dtype=None):
    cdt = torch.float64 if x.dtype == torch.float64 else torch.float32
    h = x.to(cdt)
    gate = None if z is None else F.silu(z.to(cdt))
    if gate is not None and not norm_before_gate:
        h = h * gate
    grouped = h.reshape(*h.shape[:-1], -1, group_size)
    y = (grouped * torch.rsqrt(grouped.square().mean(-1, keepdim=True) + eps)).reshape(h.shape) * weight.to(cdt)
    if gate is not None and norm_before_gate:
        y = y * gate
    return y.to(x.dtype if out_dtype is None else out_dtype)
