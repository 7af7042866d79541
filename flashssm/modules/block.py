"""The residual block (norm -> mixer, optionally norm2 -> gated MLP) of mamba_ssm's models."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from flashssm.modules.cache import InferenceCache
from flashssm.modules.norm import RMSNorm, autocast_dtype, norm_for_linear
from flashssm.ops.norm import add_rmsnorm

# The residual add and an RMSNorm in one launch each way (`add_rmsnorm`) where the stream's dtypes allow it, when
# autograd records (H200, the 2.7B 16-layer 8x4K training step 373.1 -> 365.3 ms; benchmarks/notes/profile.md,
# sixty-seventh session). Inference keeps the two apart: the norm's prepared replay serves the host-bound decoding
# step, and the fused forward alone was not timed.
FUSED_ADD_NORM = True


def add_norm(hidden, residual, norm, residual_in_fp32: bool):
    """(norm(residual + hidden) in the dtype its Linear reads, the new residual stream; fp32 when residual_in_fp32):
    mamba_ssm's 'add, then norm', with the add inside the norm's launches where FUSED_ADD_NORM allows."""
    if residual is not None and FUSED_ADD_NORM and isinstance(norm, RMSNorm) and torch.is_grad_enabled():
        summed = torch.promote_types(hidden.dtype, residual.dtype)
        stream = torch.float32 if residual_in_fp32 else summed
        # the same values as below: the sum in its promoted dtype is the stream's, and the norm's weight dtype
        # holds it exactly (below, `.to(norm.weight.dtype)`)
        if stream == summed and norm.weight.dtype in (stream, torch.float32):
            return add_rmsnorm(hidden, residual, norm.weight, eps=norm.eps, residual_dtype=stream,
                               out_dtype=autocast_dtype(hidden) or norm.weight.dtype)
    residual = hidden if residual is None else hidden + residual
    out = norm_for_linear(norm, residual.to(norm.weight.dtype))  # (its reader: the mixer's or MLP's Linear)
    return out, residual.float() if residual_in_fp32 else residual


class GatedMLP(nn.Module):
    """fc1 -> [y, gate]; y · silu(gate); fc2 (mamba_ssm's GatedMLP; hidden size rounded up to a
    multiple of 128)."""

    def __init__(self, in_features: int, hidden_features: int | None = None, out_features: int | None = None,
                 bias: bool = False, multiple_of: int = 128, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        hidden = int(8 * in_features / 3) if hidden_features is None else hidden_features
        hidden = (hidden + multiple_of - 1) // multiple_of * multiple_of
        self.fc1 = nn.Linear(in_features, 2 * hidden, bias=bias, **factory)
        self.fc2 = nn.Linear(hidden, in_features if out_features is None else out_features, bias=bias, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, gate = self.fc1(x).chunk(2, dim=-1)
        return self.fc2(y * F.silu(gate))


class Block(nn.Module):
    """residual = hidden + residual; hidden = mixer(norm(residual)); with an MLP, the same again with
    norm2 and mlp. Returns (hidden, residual); the residual stream is fp32 when residual_in_fp32.
    This is mamba_ssm's 'add, then norm' ordering, the same model as pre-norm blocks."""

    def __init__(self, mixer: nn.Module, norm: nn.Module, mlp: nn.Module | None = None, norm2: nn.Module | None = None,
                 residual_in_fp32: bool = True):
        super().__init__()
        self.norm, self.mixer = norm, mixer
        if mlp is not None:
            self.norm2, self.mlp = norm2, mlp
        else:
            self.mlp = None
        self.residual_in_fp32 = residual_in_fp32

    def _add_norm(self, hidden, residual, norm):
        return add_norm(hidden, residual, norm, self.residual_in_fp32)

    def _run(self, hidden, residual, mix):
        hidden, residual = self._add_norm(hidden, residual, self.norm)
        hidden = mix(hidden)
        if self.mlp is not None:
            hidden, residual = self._add_norm(hidden, residual, self.norm2)
            hidden = self.mlp(hidden)
        return hidden, residual

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor | None = None,
                cu_seqlens: torch.Tensor | None = None, cache: InferenceCache | None = None):
        return self._run(hidden, residual, lambda h: self.mixer(h, cu_seqlens=cu_seqlens, cache=cache))

    def step(self, hidden: torch.Tensor, residual: torch.Tensor | None, cache: InferenceCache):
        return self._run(hidden, residual, lambda h: self.mixer.step(h, cache))
