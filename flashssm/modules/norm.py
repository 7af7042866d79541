"""RMSNorm over flashssm's gated-norm kernel, and the dt bias initialisation both mixers share."""

from __future__ import annotations

import math

import torch
from torch import nn

from flashssm.ops.norm import rmsnorm_gated


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) · weight, in fp32, returned in x's dtype (mamba_ssm's RMSNorm) or out_dtype."""

    def __init__(self, dim: int, eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
        return rmsnorm_gated(x, self.weight, None, eps=self.eps, out_dtype=out_dtype)


def autocast_dtype(x: torch.Tensor) -> torch.dtype | None:
    """The dtype autocast casts a Linear's input to on x's device, or None with autocast off there."""
    kind = x.device.type
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else None


def norm_for_linear(norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """norm(x) for a Linear to read: under autocast an RMSNorm writes autocast's dtype at once (the rounding
    autocast's cast would make, without its launch, and without the cast's in the backward: `rmsnorm_gated`'s
    out_dtype); otherwise, or for another norm, norm(x)."""
    dtype = autocast_dtype(x)
    return norm(x, out_dtype=dtype) if isinstance(norm, RMSNorm) and dtype is not None else norm(x)


def init_dt_bias(n: int, dt_min: float, dt_max: float, dt_floor: float, device) -> torch.Tensor:
    """softplus⁻¹ of dt drawn log-uniformly from [dt_min, dt_max] (floored): softplus(dt_bias) starts in
    that range."""
    dt = torch.exp(torch.rand(n, device=device) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    dt = dt.clamp(min=dt_floor)
    return dt + torch.log(-torch.expm1(-dt))


def cached_step_params(module, params, compute):
    """compute()'s tensors, cached on `module` and recomputed (in place, so their addresses stay fixed
    for captured CUDA graphs) only when one of `params` changed (its version counter, data pointer or
    dtype). No device work when nothing changed."""
    key = tuple((p._version, p.data_ptr(), p.dtype, p.device) for p in params)
    cached = getattr(module, "_step_cache", None)
    if cached is None or cached[0] != key:
        inference = cached is not None and cached[1][0].is_inference()  # made under generate()'s inference_mode
        with torch.inference_mode() if inference else torch.no_grad():
            fresh = compute()
            if cached is not None and all(a.shape == b.shape for a, b in zip(cached[1], fresh)) \
                    and cached[1][0].device == fresh[0].device:
                for old, new in zip(cached[1], fresh):
                    old.copy_(new)
                fresh = cached[1]
        module._step_cache = (key, fresh)
    return module._step_cache[1]
