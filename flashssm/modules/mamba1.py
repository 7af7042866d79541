"""Mamba-1's mixer over flashssm's ops, with mamba_ssm's parameter names (its `Mamba` module)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from flashssm.modules.cache import InferenceCache, MambaState
from flashssm.modules.norm import cached_step_params, init_dt_bias
from flashssm.modules import recompute as _recompute
from flashssm.modules.recompute import Recompute
from flashssm.ops.conv1d import causal_conv1d, causal_conv1d_update
from flashssm.ops.selective_scan import selective_scan, selective_scan_step


class MambaMixer(nn.Module):
    """in_proj -> [x, z]; causal conv1d + SiLU over x; x_proj -> [dt (dt_rank), B, C]; delta =
    dt_proj.weight · dt with dt_proj.bias as delta_bias and softplus; the selective scan with
    A = -exp(A_log) (d_inner, d_state), D and the gate silu(z); out_proj.

    `recompute` (an attribute, default `recompute.DEFAULT`): in training, the conv's output (x_proj's input and the scan's
    u) is not kept for the backward but made again when it reads it (`Mamba2Mixer`'s docstring), d_inner · 2 bytes a
    token and layer fewer at bf16."""

    def __init__(self, d_model: int, d_state: int = 16, d_conv: int = 4, expand: int = 2, dt_rank="auto",
                 dt_min: float = 0.001, dt_max: float = 0.1, dt_init: str = "random", dt_scale: float = 1.0,
                 dt_init_floor: float = 1e-4, conv_bias: bool = True, bias: bool = False, layer_idx: int | None = None,
                 d_inner: int | None = None, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.d_model, self.d_state, self.d_conv = d_model, d_state, d_conv
        self.d_inner = int(expand * d_model) if d_inner is None else d_inner
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else int(dt_rank)
        self.layer_idx = layer_idx
        self.in_proj = nn.Linear(d_model, 2 * self.d_inner, bias=bias, **factory)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, d_conv, groups=self.d_inner, padding=d_conv - 1,
                                bias=conv_bias, **factory)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + 2 * d_state, bias=False, **factory)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True, **factory)
        std = self.dt_rank ** -0.5 * dt_scale
        if dt_init == "constant":
            nn.init.constant_(self.dt_proj.weight, std)
        elif dt_init == "random":
            nn.init.uniform_(self.dt_proj.weight, -std, std)
        else:
            raise ValueError(f"dt_init must be 'random' or 'constant', got {dt_init!r}")
        with torch.no_grad():
            self.dt_proj.bias.copy_(init_dt_bias(self.d_inner, dt_min, dt_max, dt_init_floor, device))
        self.dt_proj.bias._no_reinit = True
        A = torch.arange(1, d_state + 1, dtype=torch.float32, device=device).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))  # S4D-real: A[d, n] = -(n + 1)
        self.D = nn.Parameter(torch.ones(self.d_inner, device=device))
        self.A_log._no_weight_decay = self.D._no_weight_decay = True
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias, **factory)
        self.recompute = _recompute.DEFAULT

    def _ssm_params(self):
        return -torch.exp(self.A_log.float()), self.D.float(), self.dt_proj.bias.float()

    def step_params(self):
        """(A, D, delta_bias) in fp32 for decoding, as Mamba2Mixer.step_params."""
        return cached_step_params(self, (self.A_log, self.D, self.dt_proj.bias), self._ssm_params)

    def forward(self, hidden: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                cache: InferenceCache | None = None) -> torch.Tensor:
        """hidden: (batch, seqlen, d_model) -> (batch, seqlen, d_model); cu_seqlens and cache as for
        Mamba2Mixer.forward."""
        xi, z = self.in_proj(hidden).chunk(2, dim=-1)  # (batch, seqlen, d_inner) each
        keep = cache is not None
        x = causal_conv1d(xi.transpose(1, 2), self.conv1d.weight.squeeze(1), self.conv1d.bias, "silu",
                          cu_seqlens=cu_seqlens, return_final_states=keep)
        x, conv_final = x if keep else (x, None)  # x: (batch, d_inner, seqlen)
        recompute = Recompute(self.recompute)
        recompute.add(x, lambda: causal_conv1d(xi.transpose(1, 2), self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                               "silu", cu_seqlens=cu_seqlens))
        with recompute.saving():
            dt, B, C = torch.split(self.x_proj(x.transpose(1, 2)), [self.dt_rank, self.d_state, self.d_state],
                                   dim=-1)
            delta = F.linear(dt, self.dt_proj.weight)  # (batch, seqlen, d_inner); the bias goes in as delta_bias
            A, D, delta_bias = self._ssm_params()
            y = selective_scan(x, delta.transpose(1, 2), A, B.transpose(1, 2), C.transpose(1, 2), D=D,
                               z=z.transpose(1, 2), delta_bias=delta_bias, delta_softplus=True,
                               return_last_state=keep, cu_seqlens=cu_seqlens)
        if keep:
            y, last = y
            cache.layers[self.layer_idx].store(last, conv_final)
        return self.out_proj(y.transpose(1, 2))

    def step(self, hidden: torch.Tensor, cache: InferenceCache) -> torch.Tensor:
        """hidden (batch, d_model) -> (batch, d_model), as Mamba2Mixer.step."""
        state = cache.layers[self.layer_idx]
        x, z = self.in_proj(hidden).chunk(2, dim=-1)
        x = causal_conv1d_update(x, state.conv, self.conv1d.weight.squeeze(1), self.conv1d.bias, "silu",
                                 conv_state_indices=cache.batch_indices)
        dt, B, C = torch.split(self.x_proj(x), [self.dt_rank, self.d_state, self.d_state], dim=-1)
        A, D, delta_bias = self._ssm_params() if torch.is_grad_enabled() else self.step_params()
        y = selective_scan_step(state.ssm, x, F.linear(dt, self.dt_proj.weight), A, B, C, D=D, z=z,
                                delta_bias=delta_bias, delta_softplus=True, state_batch_indices=cache.batch_indices)
        return self.out_proj(y)

    def allocate_state(self, batch: int, dtype: torch.dtype, device) -> MambaState:
        return MambaState(conv=torch.zeros(batch, self.d_inner, self.d_conv - 1, dtype=self.in_proj.weight.dtype,
                                           device=device),
                          ssm=torch.zeros(batch, self.d_inner, self.d_state, dtype=dtype, device=device))
