"""The attention layer of hybrid Mamba models, with mamba_ssm's `MHA` parameter names and semantics:
in_proj -> [q, k, v (grouped KV heads), optional gated-MLP part], an optional causal conv1d over
qkv, rotary embeddings on the first rotary_emb_dim channels of q and k, causal
scaled_dot_product_attention, out_proj."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from flashssm.modules.cache import AttentionState, InferenceCache
from flashssm.ops.conv1d import causal_conv1d, causal_conv1d_update


def rotate(x: torch.Tensor, pos: torch.Tensor, inv_freq: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """Rotary embedding of x (..., seq or batch, heads, head_dim) at integer positions pos (matching
    x's second-to-last-but-one dim) on its first 2·len(inv_freq) channels, in fp32."""
    rd = 2 * inv_freq.shape[0]
    angle = pos.to(torch.float32)[:, None] * inv_freq[None, :]  # (n, rd / 2)
    cos, sin = angle.cos()[:, None, :], angle.sin()[:, None, :]  # broadcast over heads
    xr = x[..., :rd].float()
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
    else:
        x1, x2 = xr.chunk(2, dim=-1)
        out = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return torch.cat([out.to(x.dtype), x[..., rd:]], dim=-1)


class Attention(nn.Module):
    """Causal multi-head attention with grouped KV heads (mamba_ssm's MHA). Positions restart at 0
    for each packed sequence; the only length limit is the cache's max_seqlen when decoding."""

    def __init__(self, embed_dim: int, num_heads: int, num_heads_kv: int | None = None, head_dim: int | None = None,
                 mlp_dim: int = 0, qkv_proj_bias: bool = True, out_proj_bias: bool = True,
                 softmax_scale: float | None = None, causal: bool = True, d_conv: int = 0, rotary_emb_dim: int = 0,
                 rotary_emb_base: float = 10000.0, rotary_emb_interleaved: bool = False, layer_idx: int | None = None,
                 device=None, dtype=None):
        super().__init__()
        if not causal:
            raise ValueError("attn_cfg causal=False: a language model's attention layer must be causal")
        factory = {"device": device, "dtype": dtype}
        self.num_heads = num_heads
        self.num_heads_kv = num_heads if num_heads_kv is None else num_heads_kv
        if num_heads % self.num_heads_kv != 0:
            raise ValueError(f"num_heads ({num_heads}) must be a multiple of num_heads_kv ({self.num_heads_kv})")
        if head_dim is None and embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim ({embed_dim}) must be a multiple of num_heads ({num_heads})")
        self.head_dim = embed_dim // num_heads if head_dim is None else head_dim
        if rotary_emb_dim % 2 or rotary_emb_dim > self.head_dim:
            raise ValueError(f"rotary_emb_dim must be even and at most head_dim ({self.head_dim}), got {rotary_emb_dim}")
        self.mlp_dim = math.ceil(mlp_dim / 256) * 256
        self.softmax_scale, self.d_conv, self.layer_idx = softmax_scale, d_conv, layer_idx
        self.rotary_emb_interleaved = rotary_emb_interleaved
        self.qkv_dim = self.head_dim * (num_heads + 2 * self.num_heads_kv)
        self.in_proj = nn.Linear(embed_dim, self.qkv_dim + self.mlp_dim, bias=qkv_proj_bias, **factory)
        if d_conv > 0:
            self.conv1d = nn.Conv1d(self.qkv_dim, self.qkv_dim, d_conv, groups=self.qkv_dim, padding=d_conv - 1,
                                    **factory)
        self.out_proj = nn.Linear(self.head_dim * num_heads + self.mlp_dim // 2, embed_dim, bias=out_proj_bias,
                                  **factory)
        inv_freq = 1.0 / rotary_emb_base ** (torch.arange(0, rotary_emb_dim, 2, dtype=torch.float32, device=device)
                                             / max(rotary_emb_dim, 1))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def _split(self, qkv):
        """(..., qkv_dim) -> q (..., H, hd), k, v (..., Hkv, hd)."""
        hq, hk = self.num_heads * self.head_dim, self.num_heads_kv * self.head_dim
        q, k, v = torch.split(qkv, [hq, hk, hk], dim=-1)
        return (q.unflatten(-1, (self.num_heads, self.head_dim)), k.unflatten(-1, (self.num_heads_kv, self.head_dim)),
                v.unflatten(-1, (self.num_heads_kv, self.head_dim)))

    def _rotary(self, q, k, pos):
        if self.inv_freq.numel() == 0:
            return q, k
        return (rotate(q, pos, self.inv_freq, self.rotary_emb_interleaved),
                rotate(k, pos, self.inv_freq, self.rotary_emb_interleaved))

    def _finish(self, context, x_mlp):
        if self.mlp_dim > 0:
            up, gate = x_mlp.chunk(2, dim=-1)
            context = torch.cat([context, up * F.silu(gate)], dim=-1)
        return self.out_proj(context)

    def _attend(self, q, k, v, **kw):
        """q (..., Lq, H, hd), k, v (..., Lk, Hkv, hd) -> (..., Lq, H·hd)."""
        out = F.scaled_dot_product_attention(q.transpose(-3, -2), k.transpose(-3, -2), v.transpose(-3, -2),
                                             scale=self.softmax_scale, enable_gqa=self.num_heads != self.num_heads_kv,
                                             **kw)
        return out.transpose(-3, -2).flatten(-2)

    def forward(self, hidden: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                cache: InferenceCache | None = None) -> torch.Tensor:
        batch, seqlen, _ = hidden.shape
        qkv, x_mlp = torch.split(self.in_proj(hidden), [self.qkv_dim, self.mlp_dim], dim=-1)
        keep = cache is not None
        if self.d_conv > 0:
            out = causal_conv1d(qkv.transpose(1, 2), self.conv1d.weight.squeeze(1), self.conv1d.bias, None,
                                cu_seqlens=cu_seqlens, return_final_states=keep)
            out, conv_final = out if keep else (out, None)
            qkv = out.transpose(1, 2)
        bounds = [0, seqlen] if cu_seqlens is None else [int(v) for v in cu_seqlens.tolist()]
        state = cache.layers[self.layer_idx] if keep else None
        if keep and self.d_conv > 0:
            state.conv[:conv_final.shape[0]].copy_(conv_final)
        contexts = []
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):  # each packed sequence on its own, positions from 0
            q, k, v = self._split(qkv[:, lo:hi])
            q, k = self._rotary(q, k, torch.arange(hi - lo, device=hidden.device))
            if keep:
                if hi - lo > cache.max_seqlen:
                    raise ValueError(f"a prompt of {hi - lo} tokens does not fit the cache (max_seqlen "
                                     f"{cache.max_seqlen})")
                rows = slice(0, batch) if cu_seqlens is None else slice(i, i + 1)
                state.k[rows, :hi - lo].copy_(k)
                state.v[rows, :hi - lo].copy_(v)
            contexts.append(self._attend(q, k, v, is_causal=True))
        context = contexts[0] if len(contexts) == 1 else torch.cat(contexts, dim=1)
        return self._finish(context, x_mlp)

    def step(self, hidden: torch.Tensor, cache: InferenceCache) -> torch.Tensor:
        """hidden (batch, d_model) -> (batch, d_model): the token at position cache.lengths[row] of each
        row attends to the row's cached keys and its own. Padding rows (negative index) write a
        scratch row of the cache. No host synchronisation (CUDA-graph safe)."""
        batch = hidden.shape[0]
        state = cache.layers[self.layer_idx]
        qkv, x_mlp = torch.split(self.in_proj(hidden), [self.qkv_dim, self.mlp_dim], dim=-1)
        if self.d_conv > 0:
            qkv = causal_conv1d_update(qkv, state.conv, self.conv1d.weight.squeeze(1), self.conv1d.bias, None,
                                       conv_state_indices=cache.batch_indices)
        q, k, v = self._split(qkv)  # (batch, heads, hd)
        rows = cache.rows(batch)
        scratch = state.k.shape[0] - 1
        rows = torch.where(rows >= 0, rows, scratch)
        pos = cache.lengths[rows].clamp(max=cache.max_seqlen - 1)
        q, k = self._rotary(q, k, pos)
        state.k[rows, pos] = k
        state.v[rows, pos] = v
        keys, values = state.k[rows], state.v[rows]  # (batch, max_seqlen, Hkv, hd)
        mask = torch.arange(cache.max_seqlen, device=hidden.device)[None, :] <= pos[:, None]
        context = self._attend(q[:, None], keys, values, attn_mask=mask[:, None, None, :])
        return self._finish(context[:, 0], x_mlp)

    def allocate_state(self, batch: int, max_seqlen: int, dtype: torch.dtype, device) -> AttentionState:
        """One extra row: the scratch row padding rows write."""
        shape = (batch + 1, max_seqlen, self.num_heads_kv, self.head_dim)
        conv = None
        if self.d_conv > 0:
            conv = torch.zeros(batch, self.qkv_dim, self.d_conv - 1, dtype=self.in_proj.weight.dtype, device=device)
        return AttentionState(k=torch.zeros(shape, dtype=dtype, device=device),
                              v=torch.zeros(shape, dtype=dtype, device=device), conv=conv)
