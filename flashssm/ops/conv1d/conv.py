"""Causal depthwise conv1d in Triton: forward, backward and the one-token update.

Forward: one program per (tile of BLOCK_L tokens of one sequence, block of BLOCK_D channels).
Tiles never span two sequences (packed varlen input gets a host-built tile table), so no input
leaks across a boundary; the width − 1 inputs before a sequence come from initial_states or are
zero. The width shifted loads of the tile overlap and hit L1/L2: device memory sees x once and y
once. Both layouts of x, (batch, dim, seqlen) with the channels contiguous (Mamba-2's
`xBC.transpose(1, 2)`) or the tokens contiguous, run the same kernel: Triton specialises the
unit stride and coalesces along it.

Backward: dx_t = sum_j weight[W−1−j] g_{t+j} + (d final_states), with g = dy · act'(pre), pre
recomputed from x (nothing is saved but the inputs). One program per (split, block of channels)
walks a strided share of the tiles; within a tile a rolling window moves T rows at a time, so
each row of x and dy is loaded once and its g computed once (the W shifted terms come from the
window's registers, not from W shifted loads). d weight and d bias accumulate for the program's
channels in registers; the per-split partial sums are added by one small reduction afterwards, in a
fixed order (deterministic, no atomics).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from flashssm import _runtime
from flashssm.ops import grad_sink
from flashssm.ops.checks import Conv1dDims
from flashssm.ops.triton_common import cache_row, columns, join_columns, silu, silu_grad

_MAX_W = 4  # widths 2..4; per-width vectors are padded to 4 entries

# What a call takes while torch.compile traces it: "custom_op", the kernels inside `flashssm::causal_conv1d_fwd` /
# `_bwd` (ops/conv1d/autograd.py), which Inductor calls as they are, as it does ssd_scan's, and which read their
# inputs' strides at run time; "reference", the plain-PyTorch reference (Inductor compiles it itself, slower: 2.26 ms
# against the kernel's 0.303 for the 2.7B xBC conv at 8 x 4K); "kernel", the kernels' launches traced into the graph.
# Not "kernel": on the H200 (torch 2.11, triton 3.6) the 130M Mamba-2 model's training step through torch.compile
# (inductor) with the traced kernels gave NaN gradients from its first step where eager's were right, and so did one
# mixer under autocast (gradients up to 1.1 off eager's relatively), while the conv alone compiled gave eager's bits:
# most likely the traced launches' strides, fixed when traced, against an incoming gradient Inductor lays out anew
# inside the model (benchmarks/notes/hardening.md, seventy-first and seventy-second sessions). With "custom_op" the
# 24-layer model trained as eager (20 steps, losses within 1.2e-4 of eager's), through torch.compile and through its
# CUDA graphs (mode="reduce-overhead").
COMPILE_FORM = "custom_op"


@triton.jit
def _tile(i, table_ptr, n_ltiles, seqlen, BLOCK_L: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Tile i: (batch row, sequence, first token, sequence start, sequence end), token indices in int64."""
    if IS_VARLEN:
        row = table_ptr + i.to(tl.int64) * 4  # (sequence, first token, start, end)
        seq = tl.load(row)
        t0 = tl.load(row + 1)
        s0 = tl.load(row + 2)
        s1 = tl.load(row + 3)
        b = seq * 0
    else:
        b = (i // n_ltiles).to(tl.int64)
        seq = b
        t0 = ((i % n_ltiles) * BLOCK_L).to(tl.int64)
        s0 = t0 * 0
        s1 = s0 + seqlen
    return b, seq, t0, s0, s1


@triton.jit
def _load_ext(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, o_d, m_d, r, s0, s1,
              W: tl.constexpr, HAS_INIT: tl.constexpr):
    """The sequence's inputs at token rows r ([R], int64), preceded by its width − 1 initial ones: [BLOCK_D, R]."""
    in_seq = (r >= s0) & (r < s1)
    v = tl.load(x_base + o_d[:, None] * stride_x_d + r[None, :] * stride_x_l, mask=m_d[:, None] & in_seq[None, :],
                other=0.0).to(tl.float32)
    if HAS_INIT:
        j = r - s0 + (W - 1)  # column of initial_states
        m_i = (r < s0) & (j >= 0)
        v += tl.load(init_base + o_d[:, None] * stride_i_d + j[None, :] * stride_i_k,
                     mask=m_d[:, None] & m_i[None, :], other=0.0).to(tl.float32)
    return v


@triton.jit
def _pre_activation(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, w_ptr, stride_w_d, stride_w_k,
                    bias, o_d, m_d, r, s0, s1, W: tl.constexpr, HAS_INIT: tl.constexpr):
    """bias + sum_k weight[:, k] x_ext[r − (W−1) + k]: [BLOCK_D, R]."""
    acc = tl.zeros((o_d.shape[0], r.shape[0]), dtype=tl.float32) + bias[:, None]
    for k in tl.static_range(W):
        w_k = tl.load(w_ptr + o_d * stride_w_d + k * stride_w_k, mask=m_d, other=0.0).to(tl.float32)
        acc += w_k[:, None] * _load_ext(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, o_d, m_d,
                                        r - (W - 1) + k, s0, s1, W, HAS_INIT)
    return acc


@triton.jit
def _conv_fwd_kernel(
    x_ptr, w_ptr, bias_ptr, init_ptr, y_ptr, final_ptr, table_ptr,
    dim, seqlen, n_ltiles,
    stride_x_b, stride_x_d, stride_x_l,
    stride_w_d, stride_w_k,
    stride_i_s, stride_i_d, stride_i_k,
    stride_y_b, stride_y_d, stride_y_l,
    stride_f_s, stride_f_d, stride_f_k,
    W: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_INIT: tl.constexpr, SILU: tl.constexpr, STORE_FINAL: tl.constexpr,
    IS_VARLEN: tl.constexpr,
):
    b, seq, t0, s0, s1 = _tile(tl.program_id(0), table_ptr, n_ltiles, seqlen, BLOCK_L, IS_VARLEN)
    d0 = tl.program_id(1) * BLOCK_D
    o_dl = tl.arange(0, BLOCK_D)  # channel within the block
    o_d = d0 + o_dl
    m_d = o_d < dim
    # int64 only in the tile's base; offsets inside the tile are int32 (the launcher checks they fit):
    # the kernel is close to issue-bound, and 64-bit address arithmetic per element costs issue slots
    x_tile = x_ptr + b * stride_x_b + t0 * stride_x_l + d0.to(tl.int64) * stride_x_d
    y_tile = y_ptr + b * stride_y_b + t0 * stride_y_l + d0.to(tl.int64) * stride_y_d
    init_base = init_ptr + seq * stride_i_s
    lo = (s0 - t0).to(tl.int32)  # the sequence's rows, relative to the tile: [lo, hi)
    hi = (s1 - t0).to(tl.int32)
    o_l = tl.arange(0, BLOCK_L)
    acc = tl.zeros((BLOCK_D, BLOCK_L), dtype=tl.float32)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + o_d, mask=m_d, other=0.0).to(tl.float32)[:, None]
    for k in tl.static_range(W):
        w_k = tl.load(w_ptr + o_d * stride_w_d + k * stride_w_k, mask=m_d, other=0.0).to(tl.float32)
        rr = o_l - (W - 1) + k
        m_x = (rr >= lo) & (rr < hi)
        v = tl.load(x_tile + o_dl[:, None] * stride_x_d + rr[None, :] * stride_x_l, mask=m_d[:, None] & m_x[None, :],
                    other=0.0).to(tl.float32)
        if HAS_INIT:
            j = rr - lo + (W - 1)  # column of initial_states
            m_i = (rr < lo) & (j >= 0)
            v += tl.load(init_base + o_d[:, None] * stride_i_d + j[None, :] * stride_i_k,
                         mask=m_d[:, None] & m_i[None, :], other=0.0).to(tl.float32)
        acc += w_k[:, None] * v
    if SILU:
        acc = silu(acc)
    tl.store(y_tile + o_dl[:, None] * stride_y_d + o_l[None, :] * stride_y_l, acc.to(y_ptr.dtype.element_ty),
             mask=m_d[:, None] & (o_l < hi)[None, :])
    if STORE_FINAL:
        if t0 + BLOCK_L >= s1:  # the tile holding the sequence's last token (or its empty tile)
            o_k = tl.arange(0, 4)
            x_base = x_ptr + b * stride_x_b
            last = _load_ext(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, o_d, m_d,
                             s1 - (W - 1) + o_k.to(tl.int64), s0, s1, W, HAS_INIT)  # [BLOCK_D, 4]
            tl.store(final_ptr + seq * stride_f_s + o_d[:, None] * stride_f_d + o_k[None, :] * stride_f_k,
                     last.to(final_ptr.dtype.element_ty), mask=m_d[:, None] & (o_k < W - 1)[None, :])


@triton.jit
def _grad_pre(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, w_ptr, stride_w_d, stride_w_k,
              bias, dy_base, stride_dy_d, stride_dy_l, o_d, m_d, r, s0, s1,
              W: tl.constexpr, HAS_INIT: tl.constexpr, SILU: tl.constexpr):
    """g = dL/d(pre-activation) at token rows r, zero outside the sequence: [BLOCK_D, R]."""
    in_seq = (r >= s0) & (r < s1)
    g = tl.load(dy_base + o_d[:, None] * stride_dy_d + r[None, :] * stride_dy_l, mask=m_d[:, None] & in_seq[None, :],
                other=0.0).to(tl.float32)
    if SILU:
        pre = _pre_activation(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, w_ptr, stride_w_d,
                              stride_w_k, bias, o_d, m_d, r, s0, s1, W, HAS_INIT)
        g = g * silu_grad(pre, tl.sigmoid(pre))
    return g


@triton.jit
def _rows(base, o_dl, m_d, r0, hi, stride_d, stride_l, T: tl.constexpr, BLOCK_D: tl.constexpr,
          TOKENS: tl.constexpr):
    """Rows r0 .. r0 + T − 1 (int32, relative to the tile's base) of a [channel, token] view, zero from
    row hi on: a tuple of T [BLOCK_D] fp32 vectors. Tokens contiguous: one [BLOCK_D, T] load (a vector
    per thread), split into columns in registers; channels contiguous: one coalesced load per row."""
    if TOKENS:
        rr = r0 + tl.arange(0, T)
        v = tl.load(base + o_dl[:, None] * stride_d + rr[None, :] * stride_l, mask=m_d[:, None] & (rr < hi)[None, :],
                    other=0.0)
        return columns(v.to(tl.float32), BLOCK_D, T)
    out = ()
    for k in tl.static_range(T):
        out = out + (tl.load(base + o_dl * stride_d + (r0 + k) * stride_l, mask=m_d & (o_dl * 0 + r0 + k < hi),
                             other=0.0).to(tl.float32),)
    return out


@triton.jit
def _store_rows(base, vals, o_dl, m_d, r0, hi, stride_d, stride_l, T: tl.constexpr, BLOCK_D: tl.constexpr,
                TOKENS: tl.constexpr):
    """The inverse of `_rows`: T [BLOCK_D] vectors to rows r0 .. r0 + T − 1 below hi, in the pointer's dtype."""
    if TOKENS:
        rr = r0 + tl.arange(0, T)
        tl.store(base + o_dl[:, None] * stride_d + rr[None, :] * stride_l,
                 join_columns(vals, BLOCK_D, T).to(base.dtype.element_ty), mask=m_d[:, None] & (rr < hi)[None, :])
    else:
        for k in tl.static_range(T):
            tl.store(base + o_dl * stride_d + (r0 + k) * stride_l, vals[k].to(base.dtype.element_ty),
                     mask=m_d & (o_dl * 0 + r0 + k < hi))


@triton.jit
def _win(prev, cur, i: tl.constexpr, T: tl.constexpr):
    """Row i (a constexpr) of a window of 2T rows held as two tuples: prev[T + i] for -T <= i < 0,
    cur[i] for 0 <= i < T."""
    if i >= 0:
        return cur[i]
    else:
        return prev[T + i]


@triton.jit
def _window_grads(xp, xc, dy, w, bias, W: tl.constexpr, T: tl.constexpr, SILU: tl.constexpr):
    """g = dL/d(pre-activation) at T rows: xc, dy the rows, xp the T rows before them (the window's
    history), w the width's weight columns."""
    g = ()
    for k in tl.static_range(T):
        pre = bias
        for j in tl.static_range(W):
            pre = pre + w[j] * _win(xp, xc, k - (W - 1) + j, T)
        gk = dy[k]
        if SILU:
            gk = gk * silu_grad(pre, tl.sigmoid(pre))
        g = g + (gk,)
    return g


@triton.jit
def _conv_bwd_kernel(
    x_ptr, w_ptr, bias_ptr, init_ptr, dy_ptr, dfinal_ptr, dx_ptr, dw_ptr, db_ptr, dinit_ptr, table_ptr,
    dim, seqlen, n_ltiles, n_tiles, n_splits,
    stride_x_b, stride_x_d, stride_x_l,
    stride_w_d, stride_w_k,
    stride_i_s, stride_i_d, stride_i_k,
    stride_dy_b, stride_dy_d, stride_dy_l,
    stride_df_s, stride_df_d, stride_df_k,
    stride_dx_b, stride_dx_d, stride_dx_l,
    stride_di_s, stride_di_d, stride_di_k,
    W: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr, T: tl.constexpr, TOKENS: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_INIT: tl.constexpr, SILU: tl.constexpr, HAS_DFINAL: tl.constexpr,
    STORE_DINIT: tl.constexpr, IS_VARLEN: tl.constexpr,
):
    """A rolling window along the tokens: per tile, T rows at a time, each input row is loaded once,
    g = dy · act'(pre) is computed once per row (pre from the window's last W inputs), and dx of the
    previous T rows is formed from the window's g (dx_t = sum_j weight[W−1−j] g_{t+j}); one step of T
    rows past the tile supplies the g its last rows need."""
    i_split = tl.program_id(0)
    d0 = tl.program_id(1) * BLOCK_D
    o_dl = tl.arange(0, BLOCK_D)
    o_d = d0 + o_dl
    m_d = o_d < dim
    o_k = tl.arange(0, 4)
    bias = tl.zeros((BLOCK_D,), dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + o_d, mask=m_d, other=0.0).to(tl.float32)
    w = ()
    for j in tl.static_range(W):
        w = w + (tl.load(w_ptr + o_d * stride_w_d + j * stride_w_k, mask=m_d, other=0.0).to(tl.float32),)
    dw = ()
    for j in tl.static_range(W):
        dw = dw + (tl.zeros((BLOCK_D,), dtype=tl.float32),)
    db_acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for it in range(0, tl.cdiv(n_tiles - i_split, n_splits)):
        i = i_split + it * n_splits
        b, seq, t0, s0, s1 = _tile(i, table_ptr, n_ltiles, seqlen, BLOCK_L, IS_VARLEN)
        # int64 in the tile's base only; rows relative to t0 (int32): the sequence is [lo, hi), lo <= 0
        x_tile = x_ptr + b * stride_x_b + t0 * stride_x_l + d0.to(tl.int64) * stride_x_d
        dy_tile = dy_ptr + b * stride_dy_b + t0 * stride_dy_l + d0.to(tl.int64) * stride_dy_d
        dx_tile = dx_ptr + b * stride_dx_b + t0 * stride_dx_l + d0.to(tl.int64) * stride_dx_d
        init_base = init_ptr + seq * stride_i_s
        lo = (s0 - t0).to(tl.int32)
        hi = (s1 - t0).to(tl.int32)
        # the T rows before the tile: the sequence's, its initial inputs, or zero
        xp = ()
        for k in tl.static_range(T):
            r = k - T
            v = tl.load(x_tile + o_dl * stride_x_d + r * stride_x_l, mask=m_d & (o_dl * 0 + r >= lo), other=0.0).to(tl.float32)
            if HAS_INIT:
                c_i = r - lo + (W - 1)  # column of initial_states
                v += tl.load(init_base + o_d * stride_i_d + c_i * stride_i_k,
                             mask=m_d & (o_dl * 0 + r < lo) & (o_dl * 0 + c_i >= 0), other=0.0).to(tl.float32)
            xp = xp + (v,)
        xc = _rows(x_tile, o_dl, m_d, 0, hi, stride_x_d, stride_x_l, T, BLOCK_D, TOKENS)
        gc = _window_grads(xp, xc, _rows(dy_tile, o_dl, m_d, 0, hi, stride_dy_d, stride_dy_l, T, BLOCK_D, TOKENS),
                           w, bias, W, T, SILU)
        for r0 in range(0, BLOCK_L, T):
            # d weight, d bias of rows r0 .. r0 + T − 1 (the tile's own: each row is counted once)
            for k in tl.static_range(T):
                db_acc += gc[k]
            dwn = ()
            for j in tl.static_range(W):
                acc = dw[j]
                for k in tl.static_range(T):
                    acc += gc[k] * _win(xp, xc, k - (W - 1) + j, T)
                dwn = dwn + (acc,)
            dw = dwn
            # the next T rows' g (past the tile for the last step), then dx of rows r0 .. r0 + T − 1
            xn = _rows(x_tile, o_dl, m_d, r0 + T, hi, stride_x_d, stride_x_l, T, BLOCK_D, TOKENS)
            gn = _window_grads(xc, xn, _rows(dy_tile, o_dl, m_d, r0 + T, hi, stride_dy_d, stride_dy_l, T, BLOCK_D,
                                             TOKENS), w, bias, W, T, SILU)
            dxs = ()
            for k in tl.static_range(T):
                acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
                for j in tl.static_range(W):  # output row k + j reads this row through weight[W − 1 − j]
                    acc += w[W - 1 - j] * _win(gc, gn, k + j - T, T)
                if HAS_DFINAL:  # final_states are the sequence's last W − 1 inputs
                    jf = r0 + k - (hi - (W - 1))
                    acc += tl.load(dfinal_ptr + seq * stride_df_s + o_d * stride_df_d + jf * stride_df_k,
                                   mask=m_d & (o_dl * 0 + jf >= 0) & (o_dl * 0 + r0 + k < hi), other=0.0).to(tl.float32)
                dxs = dxs + (acc,)
            _store_rows(dx_tile, dxs, o_dl, m_d, r0, hi, stride_dx_d, stride_dx_l, T, BLOCK_D, TOKENS)
            xp = xc
            xc = xn
            gc = gn
        if STORE_DINIT:
            if t0 == s0:  # the sequence's first tile also owns the gradient of its initial inputs
                x_base = x_ptr + b * stride_x_b
                dy_base = dy_ptr + b * stride_dy_b
                r_i = s0 - (W - 1) + o_k.to(tl.int64)  # [4] rows before the sequence
                di = tl.zeros((BLOCK_D, 4), dtype=tl.float32)
                for j in tl.static_range(W):
                    g_i = _grad_pre(x_base, stride_x_d, stride_x_l, init_base, stride_i_d, stride_i_k, w_ptr,
                                    stride_w_d, stride_w_k, bias, dy_base, stride_dy_d, stride_dy_l, o_d, m_d, r_i + j,
                                    s0, s1, W, HAS_INIT, SILU)
                    di += w[W - 1 - j][:, None] * g_i
                if HAS_DFINAL:  # a sequence shorter than W − 1 passes initial inputs on to final_states
                    jf_i = r_i - (s1 - (W - 1))
                    m_fi = (jf_i >= 0) & (o_k < W - 1)
                    di += tl.load(dfinal_ptr + seq * stride_df_s + o_d[:, None] * stride_df_d
                                  + jf_i[None, :] * stride_df_k, mask=m_d[:, None] & m_fi[None, :],
                                  other=0.0).to(tl.float32)
                tl.store(dinit_ptr + seq * stride_di_s + o_d[:, None] * stride_di_d + o_k[None, :] * stride_di_k,
                         di.to(dinit_ptr.dtype.element_ty), mask=m_d[:, None] & (o_k < W - 1)[None, :])
    dw_acc = tl.zeros((BLOCK_D, 4), dtype=tl.float32)
    for j in tl.static_range(W):
        dw_acc += tl.where(o_k[None, :] == j, dw[j][:, None], 0.0)
    # per-split partial sums: [n_splits, dim, 4] and [n_splits, dim], added in a fixed order afterwards
    tl.store(dw_ptr + (i_split * dim + o_d[:, None]).to(tl.int64) * 4 + o_k[None, :], dw_acc, mask=m_d[:, None])
    tl.store(db_ptr + (i_split * dim + o_d).to(tl.int64), db_acc, mask=m_d)


@triton.jit
def _conv_update_kernel(
    x_ptr, state_ptr, w_ptr, bias_ptr, idx_ptr, y_ptr,
    dim, seqlen, state_len,
    stride_x_b, stride_x_d, stride_x_l,
    stride_s_b, stride_s_d, stride_s_l,
    stride_w_d, stride_w_k,
    stride_y_b, stride_y_d, stride_y_l,
    W: tl.constexpr, BLOCK_D: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr,
    HAS_INDICES: tl.constexpr,
):
    i_b = tl.program_id(1).to(tl.int64)
    o_d = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    m_d = o_d < dim
    row, live = cache_row(idx_ptr, i_b, o_d, HAS_INDICES)  # a padding row: state untouched, y = 0
    m_live = m_d & live
    s_base = state_ptr + row * stride_s_b + o_d.to(tl.int64) * stride_s_d
    x_base = x_ptr + i_b * stride_x_b + o_d * stride_x_d
    bias = tl.zeros((BLOCK_D,), dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + o_d, mask=m_d, other=0.0).to(tl.float32)
    # entry e of (state ++ new inputs): state[e] for e < state_len, x[e - state_len] after
    for t in range(seqlen):
        acc = bias
        for k in tl.static_range(W):
            e = o_d * 0 + (state_len + t - (W - 1) + k)
            v = tl.load(s_base + e * stride_s_l, mask=m_live & (e < state_len), other=0.0).to(tl.float32)
            v += tl.load(x_base + (e - state_len) * stride_x_l, mask=m_d & (e >= state_len), other=0.0).to(tl.float32)
            acc += tl.load(w_ptr + o_d * stride_w_d + k * stride_w_k, mask=m_d, other=0.0).to(tl.float32) * v
        if SILU:
            acc = silu(acc)
        acc = tl.where(live, acc, 0.0)
        tl.store(y_ptr + i_b * stride_y_b + o_d * stride_y_d + t * stride_y_l, acc.to(y_ptr.dtype.element_ty),
                 mask=m_d)
    # shift left by seqlen: every read (entry j + seqlen) happens before the write that would clobber it
    for j in range(state_len):
        e = o_d * 0 + (j + seqlen)
        v = tl.load(s_base + e * stride_s_l, mask=m_live & (e < state_len), other=0.0)
        v += tl.load(x_base + (e - state_len) * stride_x_l, mask=m_live & (e >= state_len), other=0.0).to(v.dtype)
        tl.store(s_base + j * stride_s_l, v.to(state_ptr.dtype.element_ty), mask=m_live)


# ---- launchers ----

@_runtime.cached(maxsize=64)
def pick_blocks(dim: int, seqlen: int, channels_contiguous: bool) -> tuple[int, int, int]:
    """(BLOCK_L, BLOCK_D, num_warps): 4096-element tiles, long along the contiguous dimension
    (benchmarks/notes/conv1d.md has the sweep)."""
    if channels_contiguous:
        return 32, min(128, _runtime.next_power_of_2(dim)), 4
    return min(128, max(16, _runtime.next_power_of_2(seqlen))), min(16, _runtime.next_power_of_2(dim)), 4


def _tiles(dims: Conv1dDims, block_l: int, device):
    """(table or None, tiles per batch row, tile count). Packed input: one row per tile,
    (sequence, first token, start, end); an empty sequence gets one tile (its final state)."""
    if dims.cu_seqlens is None:
        n_ltiles = max(1, _runtime.cdiv(dims.seqlen, block_l))
        return None, n_ltiles, n_ltiles * dims.batch
    rows = []
    cu = dims.cu_seqlens
    for s, (start, end) in enumerate(zip(cu, cu[1:])):
        for t0 in range(start, max(end, start + 1), block_l):
            rows.append((s, t0, start, end))
    table = torch.tensor(rows, dtype=torch.int64).to(device, non_blocking=True)
    return table, 0, len(rows)


def _check_tile_offsets(tensors: dict, block_d: int, rows: int) -> None:
    """The kernels add int32 offsets to a tile's int64 base: a tile of block_d channels and `rows`
    tokens of every tensor must lie within 2^31 elements of its base."""
    for name, t in tensors.items():
        if block_d * abs(t.stride(1)) + rows * abs(t.stride(2)) >= 2**31:
            raise ValueError(f"causal_conv1d: {name} with strides {tuple(t.stride())} is too far apart for the kernel's "
                             "32-bit tile offsets; pass a contiguous tensor")


def conv1d_forward(dims: Conv1dDims, x, weight, bias=None, initial_states=None, return_final_states=False,
                   blocks=None):
    """Validated inputs -> (y like x, final_states (num_seqs, dim, width − 1) or None).
    blocks: (BLOCK_L, BLOCK_D, num_warps) instead of the table's (for tuning)."""
    block_l, block_d, warps = blocks or pick_blocks(dims.dim, dims.seqlen, x.stride(1) == 1)
    table, n_ltiles, n_tiles = _tiles(dims, block_l, x.device)
    y = _runtime.empty_like(x)  # keeps x's layout
    _check_tile_offsets({"x": x}, block_d, block_l + _MAX_W)  # (y keeps x's layout)
    final = (_runtime.empty((dims.num_seqs, dims.dim, dims.width - 1), x.dtype, x.device)
             if return_final_states else None)
    init_arg = initial_states if initial_states is not None else x
    init_strides = initial_states.stride() if initial_states is not None else (0, 0, 0)
    final_arg = final if final is not None else x  # (an input, never an output: see rmsnorm_forward's s2)
    final_strides = final.stride() if final is not None else (0, 0, 0)
    with _runtime.on_device(x.device):
        _runtime.launch(_conv_fwd_kernel, (n_tiles, _runtime.cdiv(dims.dim, block_d)), (
            x, weight, bias if bias is not None else weight, init_arg, y, final_arg,
            table if table is not None else x,
            dims.dim, dims.seqlen, n_ltiles,
            *x.stride(), *weight.stride(), *init_strides, *y.stride(), *final_strides), x.device,
            W=dims.width, BLOCK_L=block_l, BLOCK_D=block_d, HAS_BIAS=bias is not None,
            HAS_INIT=initial_states is not None, SILU=dims.silu, STORE_FINAL=final is not None,
            IS_VARLEN=table is not None, num_warps=warps,
        )
    return y, final


@_runtime.cached(maxsize=64)
def pick_bwd_blocks(dim: int, elem_size: int) -> tuple[int, int, int, int]:
    """(BLOCK_L, BLOCK_D, T, num_warps) of the backward: T rows per step of the window (16 bytes of a
    row per thread when the tokens are contiguous), one channel per thread."""
    t = max(4, min(8, 16 // elem_size))
    return 64, min(128, max(32, _runtime.next_power_of_2(dim))), t, 4


def backward_splits(n_tiles: int, n_dblocks: int, num_sms: int) -> int:
    """Programs of the backward along the token tiles, for each block of channels: about 8 programs an SM in all, at
    most one a tile."""
    return max(1, min(n_tiles, (8 * num_sms) // n_dblocks))


def conv1d_backward(dims: Conv1dDims, x, weight, bias, initial_states, dy, dfinal, need_dinit: bool, blocks=None,
                    dx_out=None):
    """Gradients (dx like x, dweight, dbias or None, dinitial_states or None), recomputing the pre-activation.
    blocks: (BLOCK_L, BLOCK_D, T, num_warps) instead of the table's (for tuning). dx_out: a buffer in x's shape,
    strides and dtype for dx (`grad_sink.take`)."""
    channels = x.stride(1) == 1 and x.stride(2) != 1
    block_l, block_d, t, warps = blocks or pick_bwd_blocks(dims.dim, x.element_size())
    table, n_ltiles, n_tiles = _tiles(dims, block_l, x.device)
    n_dblocks = _runtime.cdiv(dims.dim, block_d)
    n_splits = backward_splits(n_tiles, n_dblocks, _runtime.sm_count(x.device, on_cpu=1))
    dx = dx_out if dx_out is not None and dx_out.stride() == x.stride() else _runtime.empty_like(x)
    _check_tile_offsets({"x": x, "the gradient of y": dy}, block_d, block_l + 2 * t)  # (dx keeps x's layout)
    dw_part = _runtime.buffer((n_splits, dims.dim, _MAX_W), torch.float32, x.device)
    db_part = _runtime.buffer((n_splits, dims.dim), torch.float32, x.device)
    store_dinit = need_dinit and initial_states is not None
    dinit = (_runtime.empty(initial_states.shape, initial_states.dtype, x.device) if store_dinit else None)
    init_arg = initial_states if initial_states is not None else x
    init_strides = initial_states.stride() if initial_states is not None else (0, 0, 0)
    df_arg = dfinal if dfinal is not None else x
    df_strides = dfinal.stride() if dfinal is not None else (0, 0, 0)
    di_arg = dinit if dinit is not None else x  # (an input, never an output: see rmsnorm_forward's s2)
    di_strides = dinit.stride() if dinit is not None else (0, 0, 0)
    with _runtime.on_device(x.device):
        _runtime.launch(_conv_bwd_kernel, (n_splits, n_dblocks), (
            x, weight, bias if bias is not None else weight, init_arg, dy, df_arg, dx, dw_part, db_part, di_arg,
            table if table is not None else x,
            dims.dim, dims.seqlen, n_ltiles, n_tiles, n_splits,
            *x.stride(), *weight.stride(), *init_strides, *dy.stride(), *df_strides, *dx.stride(),
            *di_strides), x.device,
            W=dims.width, BLOCK_L=block_l, BLOCK_D=block_d, T=t, TOKENS=not channels, HAS_BIAS=bias is not None,
            HAS_INIT=initial_states is not None, SILU=dims.silu, HAS_DFINAL=dfinal is not None,
            STORE_DINIT=store_dinit, IS_VARLEN=table is not None, num_warps=warps,
        )
    dweight = dw_part.sum(0)[:, :dims.width].to(weight.dtype)
    dbias = db_part.sum(0).to(bias.dtype) if bias is not None else None
    return dx, dweight, dbias, dinit


def plan_backward(dims: Conv1dDims, x, weight, bias, initial_states, return_final_states: bool,
                  need_dinit: bool) -> None:
    """Compile ahead (`_runtime.plan_ahead`) the backward of an autograd forward with these arguments: `conv1d_backward`
    on meta tensors, dy in y's layout (x's), the final states' gradient present where the forward returns them."""
    def dry_run(x, weight, bias, initial_states):
        dfinal = (torch.empty((dims.num_seqs, dims.dim, dims.width - 1), dtype=x.dtype, device=x.device)
                  if return_final_states else None)
        conv1d_backward(dims, x, weight, bias, initial_states, torch.empty_like(x), dfinal, need_dinit)

    _runtime.plan_ahead(x.device, dry_run, x, weight, bias, initial_states)


class CausalConv1dFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, initial_states, dims, return_final_states):
        # where the forward compiles, the backward's kernel compiles beside it
        planner = lambda: plan_backward(dims, x, weight, bias, initial_states, return_final_states,  # noqa: E731
                                        ctx.needs_input_grad[3])
        with _runtime.compiling_ahead(planner):
            y, final = conv1d_forward(dims, x, weight, bias, initial_states, return_final_states)
        ctx.save_for_backward(x, weight, bias, initial_states)
        ctx.dims = dims
        return y if final is None else (y, final)

    @staticmethod
    @once_differentiable  # (a second derivative through the kernels raises, rather than coming out as zero)
    def backward(ctx, dy, dfinal=None):
        x, weight, bias, initial_states = ctx.saved_tensors
        dx, dweight, dbias, dinit = conv1d_backward(ctx.dims, x, weight, bias, initial_states, dy, dfinal,
                                                    ctx.needs_input_grad[3],
                                                    dx_out=grad_sink.take(x) if ctx.needs_input_grad[0] else None)
        return dx, dweight, dbias if ctx.needs_input_grad[2] else None, dinit, None, None


def conv1d_update(x, conv_state, weight, bias, silu: bool, *, conv_state_indices=None, out=None):
    """Validated inputs -> y like x; conv_state updated in place."""
    squeeze = x.dim() == 2
    x3 = x[..., None] if squeeze else x
    batch, dim, seqlen = x3.shape
    y = out if out is not None else _runtime.empty(x.shape, x.dtype, x.device)
    y3 = y[..., None] if squeeze else y
    block_d = min(256, _runtime.next_power_of_2(dim))
    with _runtime.on_device(x.device):
        _runtime.launch(_conv_update_kernel, (_runtime.cdiv(dim, block_d), batch), (
            x3, conv_state, weight, bias if bias is not None else weight,
            conv_state_indices if conv_state_indices is not None else weight, y3,
            dim, seqlen, conv_state.shape[2],
            *x3.stride(), *conv_state.stride(), *weight.stride(), *y3.stride()), x3.device,
            W=weight.shape[1], BLOCK_D=block_d, HAS_BIAS=bias is not None, SILU=silu,
            HAS_INDICES=conv_state_indices is not None, num_warps=4,
        )
    return y


__all__ = ["conv1d_forward", "conv1d_backward", "conv1d_update", "CausalConv1dFn", "pick_blocks", "pick_bwd_blocks"]
