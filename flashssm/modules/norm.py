"""RMSNorm over flashssm's gated-norm kernel, and the dt bias initialisation both mixers share."""

from __future__ import annotations

import math

import torch
from torch import nn

from flashssm.ops.norm import rmsnorm_gated


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) · weight, in fp32, returned in x's dtype (mamba_ssm's RMSNorm)."""

    def __init__(self, dim: int, eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm_gated(x, self.weight, None, eps=self.eps)


def init_dt_bias(n: int, dt_min: float, dt_max: float, dt_floor: float, device) -> torch.Tensor:
    """softplus⁻¹ of dt drawn log-uniformly from [dt_min, dt_max] (floored): softplus(dt_bias) starts in
    that range."""
    dt = torch.exp(torch.rand(n, device=device) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    dt = dt.clamp(min=dt_floor)
    return dt + torch.log(-torch.expm1(-dt))
