"""Mamba-2's mixer over flashssm's ops, with mamba_ssm's parameter names (shared/SEMANTICS.md)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from flashssm.modules.cache import InferenceCache, MambaState
from flashssm.modules.norm import cached_step_params, init_dt_bias
from flashssm.modules import recompute as _recompute
from flashssm.modules.recompute import Recompute
from flashssm.ops import grad_sink
from flashssm.ops.conv1d import causal_conv1d, causal_conv1d_update
from flashssm.ops.norm import rmsnorm_gated
from flashssm.ops.ssd import ssd_scan, ssd_step

# in_proj's output split with its pieces' gradients written into one buffer (`grad_sink.split`: the gated norm's dz and
# the conv's dx in place, no concatenation in the backward). H200, 2.7B 16-layer 8 x 4K training step: -4 ms of 367
# (benchmarks/notes/profile.md, sixty-seventh and sixty-eighth sessions). False: the plain split (an A/B switch).
SPLIT_GRAD_SINK = True
_NOTHING_REMADE = Recompute(False)  # (off: it marks nothing, so one serves every call without a recompute)


class Mamba2Mixer(nn.Module):
    """in_proj -> [z, x, B, C, dt]; causal conv1d + SiLU over xBC; the SSD scan with
    A = -exp(A_log), D, dt_bias and softplus; a gated RMSNorm of y · silu(z) per group; out_proj.

    With d_ssm < expand · d_model, the remaining 2·(d_inner - d_ssm) in_proj outputs form a gated
    MLP [z0, x0] whose silu(z0)·x0 is concatenated before out_proj, as in mamba_ssm.
    norm_group_size: the gated norm's group (default d_ssm // ngroups; transformers' older Mamba2
    normalised over the whole width, d_ssm).

    `recompute` (an attribute, default `recompute.DEFAULT`, FLASHSSM_RECOMPUTE=1): in training, the conv's output (the scan's x, B and C) and the
    gated norm's output (out_proj's input, where there is no MLP part) are not kept for the backward but made again
    when it reads them, as mamba_ssm's memory-efficient path does: a conv and a norm forward more a backward, and
    (conv_dim + d_ssm) · 2 bytes a token and layer fewer kept at bf16 (the 370m model: 8.7 of ~32 KB; notes in
    benchmarks/notes/models.md). Not under torch.compile, whose partitioner decides what its graph keeps.
    """

    def __init__(self, d_model: int, d_state: int = 128, d_conv: int = 4, expand: int = 2, headdim: int = 64,
                 d_ssm: int | None = None, ngroups: int = 1, A_init_range=(1, 16), D_has_hdim: bool = False,
                 rmsnorm: bool = True, norm_before_gate: bool = False, dt_min: float = 0.001, dt_max: float = 0.1,
                 dt_init_floor: float = 1e-4, dt_limit=(0.0, math.inf), bias: bool = False, conv_bias: bool = True,
                 chunk_size: int = 256, conv_init: float | None = None, layer_idx: int | None = None,
                 norm_eps: float = 1e-5, norm_group_size: int | None = None, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.d_model, self.d_state, self.d_conv, self.expand = d_model, d_state, d_conv, expand
        self.d_inner = expand * d_model
        self.d_ssm = self.d_inner if d_ssm is None else d_ssm
        if self.d_ssm % headdim != 0:
            raise ValueError(f"d_ssm ({self.d_ssm}) must be a multiple of headdim ({headdim})")
        self.headdim, self.nheads, self.ngroups = headdim, self.d_ssm // headdim, ngroups
        if self.nheads % ngroups != 0:
            raise ValueError(f"nheads ({self.nheads}) must be a multiple of ngroups ({ngroups})")
        self.d_mlp = self.d_inner - self.d_ssm
        self.D_has_hdim, self.rmsnorm, self.norm_before_gate = D_has_hdim, rmsnorm, norm_before_gate
        self.dt_limit = (float(dt_limit[0]), float(dt_limit[1]))
        self.chunk_size, self.layer_idx = chunk_size, layer_idx
        self.norm_group_size = self.d_ssm // ngroups if norm_group_size is None else norm_group_size
        self.conv_dim = self.d_ssm + 2 * ngroups * d_state

        d_in_proj = 2 * self.d_inner + 2 * ngroups * d_state + self.nheads  # [z0, x0, z, x, B, C, dt]
        self.in_proj = nn.Linear(d_model, d_in_proj, bias=bias, **factory)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, d_conv, groups=self.conv_dim, padding=d_conv - 1,
                                bias=conv_bias, **factory)
        if conv_init is not None:
            nn.init.uniform_(self.conv1d.weight, -conv_init, conv_init)
        self.dt_bias = nn.Parameter(init_dt_bias(self.nheads, dt_min, dt_max, dt_init_floor, device))
        A = torch.empty(self.nheads, dtype=torch.float32, device=device).uniform_(*A_init_range)
        self.A_log = nn.Parameter(torch.log(A).to(dtype=dtype))
        self.D = nn.Parameter(torch.ones(self.d_ssm if D_has_hdim else self.nheads, device=device))
        for p in (self.dt_bias, self.A_log, self.D):
            p._no_weight_decay = True
        if rmsnorm:
            from flashssm.modules.norm import RMSNorm

            self.norm = RMSNorm(self.d_ssm, eps=norm_eps, **factory)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias, **factory)
        self.recompute = _recompute.DEFAULT

    def _ssm_params(self):
        A = -torch.exp(self.A_log.float())
        D = self.D.float()
        if self.D_has_hdim:
            D = D.view(self.nheads, self.headdim)
        return A, D, self.dt_bias.float()

    def step_params(self):
        """(A, D, dt_bias) in fp32 for decoding, kept in buffers and recomputed in place only when a
        parameter changed: a decoding step launches none of these small conversions (a captured graph
        reads the buffers; generate() calls this before replaying, so updated weights reach it)."""
        return cached_step_params(self, (self.A_log, self.D, self.dt_bias), self._ssm_params)

    def _output(self, y, z, z0, x0, recompute: Recompute | None = None):
        """Gated norm (or the plain gate), the MLP part, out_proj. y, z: (..., d_ssm). With `recompute` on, the norm's
        output is remade in the backward for out_proj's weight gradient (where it is out_proj's whole input)."""
        recompute = recompute or _NOTHING_REMADE
        if self.rmsnorm:
            norm = lambda y=y: rmsnorm_gated(y, self.norm.weight, z, eps=self.norm.eps,  # noqa: E731
                                             group_size=self.norm_group_size, norm_before_gate=self.norm_before_gate)
            normed = norm()
            if self.d_mlp == 0:
                recompute.add(normed, norm)
            y = normed
        if self.d_mlp > 0:
            y = torch.cat([F.silu(z0) * x0, y], dim=-1)
        with recompute.saving():
            return self.out_proj(y)

    def forward(self, hidden: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                cache: InferenceCache | None = None) -> torch.Tensor:
        """hidden: (batch, seqlen, d_model) -> (batch, seqlen, d_model). cu_seqlens (batch 1): packed
        sequences, none sees another's state. cache: each sequence's final conv and SSM states are
        written to cache rows 0..num_seqs-1 (every sequence starts from zero states)."""
        batch, seqlen, _ = hidden.shape
        zxbcdt = self.in_proj(hidden)
        sizes = [self.d_mlp, self.d_mlp, self.d_ssm, self.conv_dim, self.nheads]
        z0, x0, z, xBC, dt = (grad_sink.split(zxbcdt, sizes) if SPLIT_GRAD_SINK else torch.split(zxbcdt, sizes, dim=-1))
        keep = cache is not None
        recompute = Recompute(self.recompute)
        conv = causal_conv1d(xBC.transpose(1, 2), self.conv1d.weight.squeeze(1), self.conv1d.bias, "silu",
                             cu_seqlens=cu_seqlens, return_final_states=keep)
        conv, conv_final = conv if keep else (conv, None)
        recompute.add(conv, lambda: causal_conv1d(xBC.transpose(1, 2), self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                                  "silu", cu_seqlens=cu_seqlens))
        x, B, C = torch.split(conv.transpose(1, 2), [self.d_ssm, self.ngroups * self.d_state,
                                                     self.ngroups * self.d_state], dim=-1)
        A, D, dt_bias = self._ssm_params()
        with recompute.saving():
            y = ssd_scan(x.unflatten(-1, (self.nheads, self.headdim)), dt, A,
                         B.unflatten(-1, (self.ngroups, self.d_state)), C.unflatten(-1, (self.ngroups, self.d_state)),
                         chunk_size=self.chunk_size, D=D,
                         z=None if self.rmsnorm else z.unflatten(-1, (self.nheads, self.headdim)),
                         dt_bias=dt_bias, dt_softplus=True, dt_limit=self.dt_limit, cu_seqlens=cu_seqlens,
                         return_final_states=keep)
        if keep:
            y, final = y
            cache.layers[self.layer_idx].store(final, conv_final)
        return self._output(y.flatten(-2), z, z0, x0, recompute)

    def step(self, hidden: torch.Tensor, cache: InferenceCache) -> torch.Tensor:
        """One token per batch row: hidden (batch, d_model) -> (batch, d_model); the states of the rows
        cache.batch_indices names (rows 0..batch-1 without) advance in place. No host synchronisation
        while a CUDA graph is captured."""
        batch = hidden.shape[0]
        state = cache.layers[self.layer_idx]
        zxbcdt = self.in_proj(hidden)
        z0, x0, z, xBC, dt = torch.split(zxbcdt, [self.d_mlp, self.d_mlp, self.d_ssm, self.conv_dim, self.nheads],
                                         dim=-1)
        xBC = causal_conv1d_update(xBC, state.conv, self.conv1d.weight.squeeze(1), self.conv1d.bias, "silu",
                                   conv_state_indices=cache.batch_indices)
        x, B, C = torch.split(xBC, [self.d_ssm, self.ngroups * self.d_state, self.ngroups * self.d_state], dim=-1)
        A, D, dt_bias = self._ssm_params() if torch.is_grad_enabled() else self.step_params()
        y = ssd_step(state.ssm, x.reshape(batch, self.nheads, self.headdim), dt, A,
                     B.reshape(batch, self.ngroups, self.d_state), C.reshape(batch, self.ngroups, self.d_state), D=D,
                     z=None if self.rmsnorm else z.reshape(batch, self.nheads, self.headdim), dt_bias=dt_bias,
                     dt_softplus=True, dt_limit=self.dt_limit, state_batch_indices=cache.batch_indices)
        return self._output(y.flatten(-2), z, z0, x0)

    def allocate_state(self, batch: int, dtype: torch.dtype, device) -> MambaState:
        return MambaState(conv=torch.zeros(batch, self.conv_dim, self.d_conv - 1, dtype=self.in_proj.weight.dtype,
                                           device=device),
                          ssm=torch.zeros(batch, self.nheads, self.headdim, self.d_state, dtype=dtype, device=device))
