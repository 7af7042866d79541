"""ssd_scan backward, chunk-parallel: two chain launches, then three fully parallel ones.

Notation per chunk of Q tokens and head: a_t = dt_t A, cs the inclusive cumsum of a over the chunk,
cs_L its total, H the state entering the chunk and dH the gradient of the state after it ([N, P]),
dy the gradient reaching y before the z gate, CB_ij = C_i . B_j and L_ij = exp(cs_i - cs_j) (i >= j).

1. `entering_states` (ops/ssd/forward.py): the forward's chain again, without outputs; stores H of
   every chunk. Reads x, B and dt.
2. `_dstates_kernel`: the gradient chain, run backwards. One program per (chunk, head), tickets in
   reverse chunk order (a program waits only on a ticket taken before its own). Each program sums
   its chunk's own share sum_i exp(cs_i) C_i^T dy_i, waits for dH (chunk k+1's hand-over, or the
   gradient of final_states), stores it, and hands exp(cs_L) dH + share to chunk k-1 (chunk 0:
   the gradient of initial_states). On the way it writes dy (gated, in the input dtype) and dz,
   so the launches after it read one tensor instead of three and recompute no gate.
3. `_cb_kernel`: C_i . B_j per chunk and group, once for all the heads of the group (fp32 scratch).
   `_dx_kernel`: per (chunk, head), no dependencies. Tiles of T tokens; for every column tile j,
   the rows i >= j: bracket_j = sum_i (CB o L)_ij^T dy_i + exp(cs_L - cs_j) B_j dH, then
   dx = dt bracket + D dy, the direct part of ddt (bracket . x), dD; and the parts of the decay
   gradient that pass through H or dH (below).
4. `_dbc_kernel`: per (chunk, group, block of heads), no dependencies. For every tile pair (i >= j)
   the weights V_ij = sum_h (dy_i . x_j) L_ij dt_j are summed over the block's heads in registers,
   then dB_j += V^T C_i and dC_i += V B_j once for the block (not once per head); the state parts
   sum_h dt_j exp(cs_L - cs_j) dH x_j and sum_h exp(cs_i) H dy_i likewise. Each block writes its own
   fp32 slice of dB and dC, summed in a fixed order afterwards: no float atomics anywhere, so the
   result is deterministic whatever `torch.use_deterministic_algorithms` says. An epilogue per
   head finishes dt, A and dt_bias.

The decay gradient. a_k scales every path (pair of an input token or state and an output token or
state) that crosses k. Within the chunk, with P_ij = (dy_i . x_j) CB_ij L_ij dt_j:
  da_k = exp(cs_L) <dH, H>                       paths from before the chunk to after it
       + sum_{j<k} dt_j exp(cs_L - cs_j) x_j . (B_j dH)    tokens before k to after the chunk
       + sum_{i>=k} exp(cs_i) dy_i . (C_i H)       before the chunk to tokens from k on
       + sum_{i>=k} (sum_j P_ij - sum_j P_ji)      pairs inside the chunk that cross k
The last line is the only difference of sums (of the same fp32 P values, which cancel exactly but
for the rounding of the sums); the three boundary terms are sums of genuine crossing paths.
ddt_k = bracket_k . x_k + A da_k (then back through the clamp, softplus and bias); dA = sum dt da.

Scratch per (chunk, head), fp32: dt after processing and cs (written by launch 3 for launch 4),
the boundary terms of da, and the pair sums.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.checks import SSDDims
from flashssm._runtime import workspace
from flashssm.ops.triton_common import process_dt, process_dt_grad
from flashssm.ops.ssd import backward_chain
from flashssm.ops.ssd.backward_chain import (ROUND, SPLIT, TF32, _dstates_kernel, _mm_cl, _mm_cr, _operand, _or,
                                             heads_per_program)
from flashssm.ops.ssd.backward_tiles import _pair_tiles
from flashssm.ops.ssd.forward import (_block_n, _dot_precision, _pick_config, chunk_of, d_operand,
                                      entering_states, init_operand, launch, states_block_p, varlen_table)


@triton.jit
def _cb_kernel(B_ptr, C_ptr, cb_ptr, table_ptr, batch, seqlen, dstate, ngroups,
               stride_B_b, stride_B_t, stride_B_g, stride_B_n,
               stride_C_b, stride_C_t, stride_C_g, stride_C_n,
               CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_N: tl.constexpr, IS_VARLEN: tl.constexpr,
               DOT_PRECISION: tl.constexpr):
    """C_i . B_j for the tile pair (i >= j) of one chunk and group: fp32, (rows, groups, Q, Q)."""
    pid = tl.program_id(0)
    g = pid % ngroups
    rest = pid // ngroups
    n_t: tl.constexpr = CHUNK // T
    i_t = tl.program_id(1) // n_t
    j_t = tl.program_id(1) % n_t
    if j_t <= i_t:
        b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
        offs_t = tl.arange(0, T)
        ti = i_t * T + offs_t
        tj = j_t * T + offs_t
        C_i, B_j = _pair_tiles(B_ptr, C_ptr, b, g, start, length, ti, tj, dstate, stride_B_b, stride_B_t, stride_B_g,
                               stride_B_n, stride_C_b, stride_C_t, stride_C_g, stride_C_n, BLOCK_N)
        cb = tl.dot(C_i, tl.trans(B_j), input_precision=DOT_PRECISION)
        tl.store(cb_ptr + (rest.to(tl.int64) * ngroups + g) * (CHUNK * CHUNK) + ti[:, None] * CHUNK + tj[None, :], cb)


@triton.jit
def _dx_kernel(
    x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, dt_bias_ptr, init_ptr, dy_ptr, states_ptr, dstates_ptr,
    cb_ptr, dx_ptr, ddt_ptr, dtp_ptr, cs_ptr, edge_ptr, dcs_ptr, part_ptr, table_ptr,
    batch, seqlen, nheads, headdim, dstate, heads_per_group, ngroups,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_B_b, stride_B_t, stride_B_g, stride_B_n,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_D_h, stride_D_p,
    stride_init_s, stride_init_h, stride_init_p, stride_init_n,
    dt_lo, dt_hi,
    CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_D: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr, HAS_INIT: tl.constexpr,
    IS_VARLEN: tl.constexpr, NEED_DX: tl.constexpr, NEED_DA: tl.constexpr,
    DOT_PRECISION: tl.constexpr, MODE: tl.constexpr, N_SPLIT: tl.constexpr = 1,
):
    # N_SPLIT: the [BLOCK_N, BLOCK_P] state tiles (H, dH) taken in that many row blocks, each its own product: fp32
    # states of 256 x 128 kept whole need 288 KB of shared memory, past Hopper's 227 KB (`_dx_split`)
    pid = tl.program_id(0)
    h = pid % nheads
    rest = pid // nheads
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    g = h // heads_per_group
    NH: tl.constexpr = BLOCK_N // N_SPLIT
    offs_p = tl.arange(0, BLOCK_P)
    offs_q = tl.arange(0, CHUNK)
    offs_t = tl.arange(0, T)
    mask_p = offs_p < headdim
    A = tl.load(A_ptr + h).to(tl.float32)
    dt_bias = 0.0
    if HAS_DT_BIAS:
        dt_bias = tl.load(dt_bias_ptr + h).to(tl.float32)
    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    x_base = x_ptr + b64 * stride_x_b + h64 * stride_x_h + start * stride_x_t
    dt_base = dt_ptr + b64 * stride_dt_b + h64 * stride_dt_h + start * stride_dt_t
    B_base = B_ptr + b64 * stride_B_b + g.to(tl.int64) * stride_B_g + start * stride_B_t
    C_base = C_ptr + b64 * stride_C_b + g.to(tl.int64) * stride_C_g + start * stride_C_t
    cb_base = cb_ptr + (rest.to(tl.int64) * ngroups + g) * (CHUNK * CHUNK)
    row_base = ((b64 * seqlen + start) * nheads + h64) * headdim  # dy, dx: contiguous like x
    prog_row = rest.to(tl.int64) * nheads + h64
    scratch = prog_row * CHUNK

    # dt after processing and its cumsum over the chunk, for this launch's tiles and the next launch
    mask_q = offs_q < length
    dt_raw = tl.load(dt_base + offs_q * stride_dt_t, mask=mask_q, other=0.0).to(tl.float32)
    dt_all = tl.where(mask_q, process_dt(dt_raw, dt_bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), 0.0)
    total = tl.sum(dt_all * A, axis=0)
    tl.store(dtp_ptr + scratch + offs_q, dt_all)
    tl.store(cs_ptr + scratch + offs_q, tl.cumsum(dt_all * A, axis=0))
    tl.debug_barrier()

    if NEED_DA:
        # paths from before the chunk to after it, and from before the chunk to each token (these
        # start the per-token sums that the pairs add to), a block of N_SPLIT state rows at a time
        carry = 0.0
        for part_n in tl.static_range(N_SPLIT):
            offs_n = part_n * NH + tl.arange(0, NH)
            mask_n = offs_n < dstate
            state_off = prog_row * (BLOCK_N * BLOCK_P) + offs_n[:, None] * BLOCK_P + offs_p[None, :]
            H = tl.load(states_ptr + state_off).to(tl.float32)
            if HAS_INIT:
                if k == 0:  # exact, whatever the states' dtype
                    H = tl.load(init_ptr + seq.to(tl.int64) * stride_init_s + h64 * stride_init_h
                                + offs_p[None, :] * stride_init_p + offs_n[:, None] * stride_init_n,
                                mask=mask_n[:, None] & mask_p[None, :], other=0.0).to(tl.float32)
            carry += tl.sum(tl.sum(H * tl.load(dstates_ptr + state_off), axis=1), axis=0)
            if part_n > 0:
                tl.debug_barrier()  # (the previous block's dcs stores, read back below)
            for t0 in range(0, length, T):
                tt = t0 + offs_t
                mask_tt = tt < length
                C_t = _operand(tl.load(C_base + tt[:, None] * stride_C_t + offs_n[None, :] * stride_C_n,
                                       mask=mask_tt[:, None] & mask_n[None, :], other=0.0))
                dy_t = tl.load(dy_ptr + row_base + tt[:, None] * (nheads * headdim) + offs_p[None, :],
                               mask=mask_tt[:, None] & mask_p[None, :], other=0.0).to(tl.float32)
                ch = _mm_cr(C_t, H, tl.zeros((T, BLOCK_P), dtype=tl.float32), MODE, DOT_PRECISION)
                share = tl.exp(tl.load(cs_ptr + scratch + tt)) * tl.sum(ch * dy_t, axis=1)
                if part_n > 0:
                    share += tl.load(dcs_ptr + scratch + tt)
                tl.store(dcs_ptr + scratch + tt, share)
        carry = tl.exp(total) * carry
        tl.debug_barrier()

    if HAS_D:
        D = tl.load(D_ptr + h * stride_D_h + offs_p * stride_D_p, mask=mask_p, other=0.0).to(tl.float32)
    dD_acc = tl.zeros((BLOCK_P,), dtype=tl.float32)
    for j0 in range(0, length, T):
        tj = j0 + offs_t
        mask_j = tj < length
        mask_jp = mask_j[:, None] & mask_p[None, :]
        dt_j = tl.load(dtp_ptr + scratch + tj)
        cs_j = tl.load(cs_ptr + scratch + tj)
        x_j = _operand(tl.load(x_base + tj[:, None] * stride_x_t + offs_p[None, :] * stride_x_p, mask=mask_jp,
                               other=0.0))
        xf = x_j.to(tl.float32)
        # what dH says about token j: its path out of the chunk (dH reloaded per tile: not held in registers)
        bracket = tl.zeros((T, BLOCK_P), dtype=tl.float32)
        for part_n in tl.static_range(N_SPLIT):
            offs_n = part_n * NH + tl.arange(0, NH)
            B_j = _operand(tl.load(B_base + tj[:, None] * stride_B_t + offs_n[None, :] * stride_B_n,
                                   mask=mask_j[:, None] & (offs_n < dstate)[None, :], other=0.0))
            bracket = _mm_cr(B_j, tl.load(dstates_ptr + prog_row * (BLOCK_N * BLOCK_P) + offs_n[:, None] * BLOCK_P
                                          + offs_p[None, :]), bracket, MODE, DOT_PRECISION)
        bracket *= tl.exp(total - cs_j)[:, None]
        if NEED_DA:  # paths from token j to after the chunk
            tl.store(edge_ptr + scratch + tj, tl.sum(bracket * xf, axis=1) * dt_j)
        cols = tl.zeros((T,), dtype=tl.float32)
        # the pairs (i >= j) inside the chunk
        for i0 in range(j0, length, T):
            ti = i0 + offs_t
            mask_i = ti < length
            cs_i = tl.load(cs_ptr + scratch + ti)
            dy_i = _operand(tl.load(dy_ptr + row_base + ti[:, None] * (nheads * headdim) + offs_p[None, :],
                                    mask=mask_i[:, None] & mask_p[None, :], other=0.0))
            cb = tl.load(cb_base + ti[:, None] * CHUNK + tj[None, :])  # [T (i), T (j)]
            m = cb * tl.exp(tl.where(ti[:, None] >= tj[None, :], cs_i[:, None] - cs_j[None, :], -float("inf")))
            bracket = _mm_cl(tl.trans(m), dy_i, bracket, MODE, DOT_PRECISION)
            if NEED_DA:  # row sums (to the later token's sum) and column sums of the pairs
                pairs = tl.dot(dy_i, tl.trans(x_j), input_precision=DOT_PRECISION) * m * dt_j[None, :]
                cols += tl.sum(pairs, axis=0)
                tl.store(dcs_ptr + scratch + ti, tl.load(dcs_ptr + scratch + ti) + tl.sum(pairs, axis=1))
        dyf = tl.load(dy_ptr + row_base + tj[:, None] * (nheads * headdim) + offs_p[None, :], mask=mask_jp,
                      other=0.0).to(tl.float32)
        if NEED_DA:  # the direct part of ddt; A da is added at the end
            tl.store(ddt_ptr + (b64 * seqlen + start + tj) * nheads + h64, tl.sum(bracket * xf, axis=1),
                     mask=mask_j)
            tl.debug_barrier()
            tl.store(dcs_ptr + scratch + tj, tl.load(dcs_ptr + scratch + tj) - cols)
        dx = bracket * dt_j[:, None]
        if HAS_D:
            dx += dyf * D[None, :]
            dD_acc += tl.sum(dyf * xf, axis=0)
        if NEED_DX:
            tl.store(dx_ptr + row_base + tj[:, None] * (nheads * headdim) + offs_p[None, :],
                     dx.to(dx_ptr.dtype.element_ty), mask=mask_jp)
        tl.debug_barrier()
    part = part_ptr + prog_row * (BLOCK_P + 2)
    tl.store(part + offs_p, dD_acc)

    if NEED_DA:
        # da from the boundary terms and the pair sums; ddt; this program's shares of dA and dt_bias
        edge = tl.load(edge_ptr + scratch + offs_q, mask=mask_q, other=0.0)
        dcs = tl.load(dcs_ptr + scratch + offs_q, mask=mask_q, other=0.0)
        da = carry + (tl.cumsum(edge, axis=0) - edge) + (tl.sum(dcs, axis=0) - tl.cumsum(dcs, axis=0) + dcs)
        da = tl.where(mask_q, da, 0.0)
        ddt_ptrs = ddt_ptr + (b64 * seqlen + start + offs_q) * nheads + h64
        ddt = tl.load(ddt_ptrs, mask=mask_q, other=0.0) + A * da
        ddt = tl.where(mask_q, process_dt_grad(ddt, dt_raw, dt_bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), 0.0)
        tl.store(ddt_ptrs, ddt, mask=mask_q)
        tl.store(part + BLOCK_P + offs_q * 0, tl.sum(da * dt_all, axis=0) + offs_q * 0.0, mask=offs_q == 0)
        tl.store(part + BLOCK_P + 1 + offs_q * 0, tl.sum(ddt, axis=0) + offs_q * 0.0, mask=offs_q == 0)


@triton.jit
def _dbc_kernel(
    x_ptr, B_ptr, C_ptr, init_ptr, dy_ptr, states_ptr, dstates_ptr, dB_ptr, dC_ptr, dtp_ptr, cs_ptr, table_ptr,
    batch, seqlen, nheads, headdim, dstate, ngroups, heads_per_group, heads_per_block, n_hblocks,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_B_b, stride_B_t, stride_B_g, stride_B_n,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_init_s, stride_init_h, stride_init_p, stride_init_n,
    stride_dB_r, stride_dB_b, stride_dB_t, stride_dB_g,  # dB and dC slices: (n_hblocks, batch, seqlen, g, N) fp32
    CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_INIT: tl.constexpr, IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr, MODE: tl.constexpr,
):
    pid = tl.program_id(0)
    hb = pid % n_hblocks
    rest = pid // n_hblocks
    g = rest % ngroups
    rest = rest // ngroups
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    h_first = g * heads_per_group + hb * heads_per_block
    h_end = tl.minimum(h_first + heads_per_block, (g + 1) * heads_per_group)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    offs_t = tl.arange(0, T)
    mask_p = offs_p < headdim
    mask_n = offs_n < dstate
    mask_np = mask_n[:, None] & mask_p[None, :]
    b64 = b.to(tl.int64)
    g64 = g.to(tl.int64)
    x_base = x_ptr + b64 * stride_x_b + start * stride_x_t
    B_base = B_ptr + b64 * stride_B_b + g64 * stride_B_g + start * stride_B_t
    C_base = C_ptr + b64 * stride_C_b + g64 * stride_C_g + start * stride_C_t
    dy_base = dy_ptr + (b64 * seqlen + start) * nheads * headdim
    bc_off = hb.to(tl.int64) * stride_dB_r + b64 * stride_dB_b + g64 * stride_dB_g + start * stride_dB_t
    row0 = rest.to(tl.int64) * nheads
    state_off = offs_n[:, None] * BLOCK_P + offs_p[None, :]

    # the state parts of dB and dC, summed over the block's heads; they start the slices (two sweeps,
    # so that only one state and one accumulator are live at a time)
    for t0 in range(0, length, T):
        tt = t0 + offs_t
        mask_tt = tt < length
        acc = tl.zeros((T, BLOCK_N), dtype=tl.float32)
        for hh in range(0, h_end - h_first):
            h64 = (h_first + hh).to(tl.int64)
            scratch = (row0 + h64) * CHUNK
            w = tl.load(dtp_ptr + scratch + tt) * tl.exp(tl.load(cs_ptr + scratch + CHUNK - 1)
                                                          - tl.load(cs_ptr + scratch + tt))
            x_t = _operand(tl.load(x_base + h64 * stride_x_h + tt[:, None] * stride_x_t + offs_p[None, :] * stride_x_p,
                                   mask=mask_tt[:, None] & mask_p[None, :], other=0.0))
            dH = tl.load(dstates_ptr + (row0 + h64) * (BLOCK_N * BLOCK_P) + state_off)
            acc += _mm_cr(x_t, tl.trans(dH), tl.zeros((T, BLOCK_N), dtype=tl.float32), MODE, DOT_PRECISION) * w[:, None]
        tl.store(dB_ptr + bc_off + tt[:, None] * stride_dB_t + offs_n[None, :], acc,
                 mask=mask_tt[:, None] & mask_n[None, :])
    for t0 in range(0, length, T):
        tt = t0 + offs_t
        mask_tt = tt < length
        acc = tl.zeros((T, BLOCK_N), dtype=tl.float32)
        for hh in range(0, h_end - h_first):
            h64 = (h_first + hh).to(tl.int64)
            scratch = (row0 + h64) * CHUNK
            dy_t = _operand(tl.load(dy_base + tt[:, None] * (nheads * headdim) + h64 * headdim + offs_p[None, :],
                                    mask=mask_tt[:, None] & mask_p[None, :], other=0.0))
            H = tl.load(states_ptr + (row0 + h64) * (BLOCK_N * BLOCK_P) + state_off).to(tl.float32)
            if HAS_INIT:
                if k == 0:
                    H = tl.load(init_ptr + seq.to(tl.int64) * stride_init_s + h64 * stride_init_h
                                + offs_p[None, :] * stride_init_p + offs_n[:, None] * stride_init_n,
                                mask=mask_np, other=0.0).to(tl.float32)
            acc += (_mm_cr(dy_t, tl.trans(H), tl.zeros((T, BLOCK_N), dtype=tl.float32), MODE, DOT_PRECISION)
                    * tl.exp(tl.load(cs_ptr + scratch + tt))[:, None])
        tl.store(dC_ptr + bc_off + tt[:, None] * stride_dB_t + offs_n[None, :], acc,
                 mask=mask_tt[:, None] & mask_n[None, :])
    tl.debug_barrier()

    # the pairs (i >= j) inside the chunk: V_ij = sum_h (dy_i . x_j) L_ij dt_j, then one product each
    for j0 in range(0, length, T):
        tj = j0 + offs_t
        mask_j = tj < length
        mask_jn = mask_j[:, None] & mask_n[None, :]
        B_j = _operand(tl.load(B_base + tj[:, None] * stride_B_t + offs_n[None, :] * stride_B_n, mask=mask_jn,
                               other=0.0))
        acc_b = tl.zeros((T, BLOCK_N), dtype=tl.float32)
        for i0 in range(j0, length, T):
            ti = i0 + offs_t
            mask_i = ti < length
            mask_in = mask_i[:, None] & mask_n[None, :]
            v = tl.zeros((T, T), dtype=tl.float32)
            for hh in range(0, h_end - h_first):
                h64 = (h_first + hh).to(tl.int64)
                scratch = (row0 + h64) * CHUNK
                cs_i = tl.load(cs_ptr + scratch + ti)
                cs_j = tl.load(cs_ptr + scratch + tj)
                dt_j = tl.load(dtp_ptr + scratch + tj)
                dy_i = _operand(tl.load(dy_base + ti[:, None] * (nheads * headdim) + h64 * headdim + offs_p[None, :],
                                        mask=mask_i[:, None] & mask_p[None, :], other=0.0))
                x_j = _operand(tl.load(x_base + h64 * stride_x_h + tj[:, None] * stride_x_t
                                       + offs_p[None, :] * stride_x_p, mask=mask_j[:, None] & mask_p[None, :],
                                       other=0.0))
                dyx = tl.dot(dy_i, tl.trans(x_j), input_precision=DOT_PRECISION)  # [T (i), T (j)]
                v += dyx * tl.exp(tl.where(ti[:, None] >= tj[None, :], cs_i[:, None] - cs_j[None, :],
                                           -float("inf"))) * dt_j[None, :]
            C_i = _operand(tl.load(C_base + ti[:, None] * stride_C_t + offs_n[None, :] * stride_C_n, mask=mask_in,
                                   other=0.0))
            acc_b = _mm_cl(tl.trans(v), C_i, acc_b, MODE, DOT_PRECISION)
            dc_ptrs = dC_ptr + bc_off + ti[:, None] * stride_dB_t + offs_n[None, :]
            dc = tl.load(dc_ptrs, mask=mask_in, other=0.0) + _mm_cl(v, B_j, tl.zeros((T, BLOCK_N), dtype=tl.float32),
                                                                    MODE, DOT_PRECISION)
            tl.store(dc_ptrs, dc, mask=mask_in)
        db_ptrs = dB_ptr + bc_off + tj[:, None] * stride_dB_t + offs_n[None, :]
        tl.store(db_ptrs, tl.load(db_ptrs, mask=mask_jn, other=0.0) + acc_b, mask=mask_jn)
        tl.debug_barrier()


def _dx_split(block_n: int, block_p: int, element_size: int) -> int:
    """Row blocks `_dx_kernel` takes its state tiles in: two where they are wide fp32 tiles
    (`backward_chain.wide_fp32_tiles`), whose whole tiles need 288 KB of shared memory on sm_90 (the fifty-ninth
    session's fuzz at model shapes), else one."""
    return 2 if backward_chain.wide_fp32_tiles(block_n, block_p, element_size) else 1


def _heads_per_block(dims: SSDDims, n_rows: int, device: torch.device) -> int:
    """Heads summed in registers by one program of launch 4: as many as keep about two programs per SM."""
    return heads_per_program(dims.nheads // dims.ngroups, n_rows * dims.ngroups, 2, device)


def ssd_backward(dims: SSDDims, dout, dfinal, x, dt, A, B, C, *, deterministic=None, form=None, **kw):
    """Gradients of ssd_scan on validated inputs (see `ssd_backward_parallel` for the arguments and
    result). Two implementations: the chunk-parallel one here, and the recurrent one of
    ops/ssd/backward_chain.py. `form` ("parallel" or "chain") picks one (default DEFAULT_FORM). The deterministic
    mode runs the chain form's tiles with their sums in slots (no float atomics) where `deterministic_tiles` says they
    can, and the parallel form, which never uses float atomics, elsewhere."""
    if deterministic is None:
        deterministic = torch.are_deterministic_algorithms_enabled()
    if deterministic:
        form = "chain" if deterministic_tiles(dims, x) else "parallel"
        if form == "chain":
            kw["deterministic"] = True
    else:
        form = form or DEFAULT_FORM
    if form == "parallel":
        kw.pop("states", None)  # (the chain form's sweeps take states stored by the forward; this form recomputes)
        return ssd_backward_parallel(dims, dout, dfinal, x, dt, A, B, C, **kw)
    return backward_chain.ssd_backward(dims, dout, dfinal, x, dt, A, B, C, **kw)


def plan_backward(dims: SSDDims, x, dt, A, B, C, *, D, z, dt_bias, dt_softplus, initial_states, state_dtype,
                  return_final_states, needs, states):
    """Compile ahead (`_runtime.plan_ahead`) the backward of an autograd forward with these arguments (the planner of
    `_runtime.compiling_ahead` around `SSDScanFunction`'s forward calls this): `ssd_backward` on meta tensors, with dy
    contiguous in x's dtype, y before the gate stored where z is given, the final states' gradient present where the
    forward returns them (autograd passes zeros for an unused one), `states` the buffer the forward stores for the
    backward (or None), so that the backward's launches compile while the forward's do."""
    def dry_run(x, dt, A, B, C, D, z, dt_bias, initial_states, states):
        dfinal = None
        if return_final_states:
            dfinal = torch.empty((dims.num_seqs, dims.nheads, dims.headdim, dims.dstate),
                                 dtype=state_dtype or torch.float32, device=x.device)
        ypre = torch.empty(x.shape, dtype=x.dtype, device=x.device) if z is not None else None
        ssd_backward(dims, torch.empty(x.shape, dtype=x.dtype, device=x.device), dfinal, x, dt, A, B, C, D=D, z=z,
                     ypre=ypre, dt_bias=dt_bias, dt_softplus=dt_softplus, initial_states=initial_states,
                     state_dtype=state_dtype, needs=needs, states=states)

    _runtime.plan_ahead(x.device, dry_run, x, dt, A, B, C, D, z, dt_bias, initial_states, states)


def deterministic_tiles(dims: SSDDims, x: torch.Tensor) -> bool:
    """Whether the deterministic mode runs the chain form's tiles (their sums in slots, summed in a fixed order) rather
    than the parallel form: where the default mode runs the tiles (enough chunks to fill the GPU several times over;
    at 1x2K of the 2.7B shape the parallel form's call was faster, 1.96 against 2.40 ms on an H100), where their state
    paths run as a launch of their own (the tiles kernel's own paths add an atomic a head), not for float64
    (gradcheck under the interpreter), and not when DETERMINISTIC_TILES is off."""
    from flashssm.ops.ssd import backward_tiles

    return (DETERMINISTIC_TILES and x.dtype != torch.float64 and backward_chain.use_tiles(dims, x.device, x.dtype)
            and backward_tiles.paths_launch(_block_n(dims.dstate), states_block_p(dims.headdim)))


# The deterministic mode's form where the tiles can run it (False: the parallel form always, for A/B). H100, 2.7B shape,
# bf16, training call (benchmarks/notes/ssd_backward.md, eighteenth session): 8x4K 8.05 -> 4.80 ms, 1x32K 8.20 -> 5.36,
# peak above the inputs 1813 -> 1266 MiB (the atomic default: 3.99 and 4.56 ms, 1072 MiB).
DETERMINISTIC_TILES = True

# The default form. On an H100 (benchmarks/notes/ssd_backward.md, v3): with D, z, dt_bias and softplus
# the parallel form was 1.15-1.6x faster than the chain form from 1x2K to 8x4K, but on the bench's
# train workloads (no z) it was 0.96x at 8x4K, and it takes about 1.8x the memory (above mamba_ssm's).
# The deterministic mode runs it where the tiles do not run (`deterministic_tiles`).
DEFAULT_FORM = "chain"


def ssd_backward_parallel(dims: SSDDims, dout, dfinal, x, dt, A, B, C, *, D=None, z=None, ypre=None, dt_bias=None,
                          dt_softplus=False, initial_states=None, state_dtype=None, needs=None,
                          mode=None, tile=None, warps=None, heads_per_block=None, stages=None):
    """Gradients of ssd_scan on validated inputs: [dx, ddt, dA, dB, dC, dD, dz, ddt_bias, dinitial_states],
    None for an absent input or one whose flag in `needs` (same order) is False. `ypre` is y before
    the z gate (needed with z); dfinal is the gradient of final_states, or None for zero.
    Five launches (states, state gradients, C.B^T, dx, dB/dC) and a few small sums and casts; no
    float atomics, so the result is the same bits every run. For tuning: mode (ROUND, SPLIT, TF32),
    tile (tokens per tile), warps and stages (a triple each, one per launch after the first),
    heads_per_block."""
    device = x.device
    inputs = (x, dt, A, B, C, D, z, dt_bias, initial_states)
    needs = [True] * 9 if needs is None else list(needs)
    need = {name: n and t is not None for name, n, t in
            zip(("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "init"), needs, inputs)}
    need_da = need["dt"] or need["A"] or need["dt_bias"]
    need_bc = need["B"] or need["C"]
    h, p, n, g = dims.nheads, dims.headdim, dims.dstate, dims.ngroups
    q = dims.chunk_size
    block_n = _block_n(n)
    block_p = max(16, _runtime.next_power_of_2(p))
    sixteen = x.dtype in (torch.float16, torch.bfloat16)
    # SPLIT is not used by the dB/dC launch, whose V sums many heads' rounding errors (and whose
    # split products gave a wrong dC on an H100 with Triton 3.6 for blocks of 3 heads of 8: not understood)
    mode = (SPLIT if mode is None else mode) if sixteen else ROUND
    tile = tile or min(64 if sixteen else 32, q)
    w_states, w_dx, w_bc = warps or (4 if block_n * block_p <= 8192 else 8, 4, 8)
    s_states, s_dx, s_bc = stages or (2, 1, 2)
    precision = _dot_precision(x.dtype)

    varlen = varlen_table(dims, device) if dims.cu_seqlens is not None else None
    if ypre is None and need["z"]:  # y before the gate, for dz (the autograd op always has it)
        ypre = launch(dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                      initial_states=initial_states, state_dtype=state_dtype, store_ypre=True)[2]
    states = entering_states(dims, x, dt, A, B, dt_bias=dt_bias, dt_softplus=dt_softplus,
                             initial_states=initial_states, state_dtype=state_dtype, varlen=varlen)
    n_rows = states.shape[0]
    table, _, n_lanes = varlen if varlen is not None else (x, n_rows, dims.batch)
    is_varlen = dims.cu_seqlens is not None
    dt_lo, dt_hi = float(dims.dt_limit[0]), float(dims.dt_limit[1])

    # 2. the state gradients, dy and dz
    counter, flags, slots = workspace(device).get(n_lanes * h, block_p * block_n, torch.float32)
    dy = _runtime.buffer(x.shape, x.dtype, device)
    dz = _runtime.empty(x.shape, x.dtype, device) if need["z"] else None
    dstates = _runtime.buffer((n_rows, h, block_n, block_p), torch.float32, device)
    dinit = _runtime.empty((dims.num_seqs, h, p, n), torch.float32, device) if need["init"] else None
    sub = _pick_config(p, n, q, x.dtype.itemsize, False).sub
    z_arg = z if z is not None else x
    yp = ypre if ypre is not None else x
    df_arg = dfinal if dfinal is not None else x
    df_strides = dfinal.stride() if dfinal is not None else (0, 0, 0, 0)
    with _runtime.on_device(device):
        compiled["dstates"] = _runtime.launch(_dstates_kernel, (n_rows * h,), (
            dt, A, C, z_arg, dt_bias if dt_bias is not None else A, dout, yp, df_arg,
            dy, _or(dz, dy), dstates, _or(dinit, dstates), counter, flags, slots, table, x, dstates, dstates, dstates,
            table, dstates, dstates, dims.batch, dims.seqlen, h, p, n, h // g, n_rows, n_rows * h,
            *dt.stride(), *C.stride(), *z_arg.stride(), *dout.stride(), *yp.stride(), *df_strides, *x.stride(),
            dt_lo, dt_hi), dt.device,
            CHUNK=q, SUB=sub, BLOCK_P=block_p, BLOCK_N=block_n, HAS_Z=z is not None,
            HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus, HAS_DFINAL=dfinal is not None,
            IS_VARLEN=is_varlen, NEED_DZ=dz is not None, NEED_DINIT=dinit is not None,
            DOT_PRECISION=precision, MODE=mode, num_warps=w_states, num_stages=s_states,
        )

    # 3. C . B^T per chunk and group (shared by the heads); dx, dD, ddt and the shares of dA, dt_bias
    n_t = q // tile
    cb = _runtime.buffer((n_rows, g, q, q), torch.float32, device)
    with _runtime.on_device(device):
        _runtime.launch(_cb_kernel, (n_rows * g, n_t * n_t), (
            B, C, cb, table, dims.batch, dims.seqlen, n, g, *B.stride(), *C.stride()), B.device,
            CHUNK=q, T=tile, BLOCK_N=block_n, IS_VARLEN=is_varlen, DOT_PRECISION=precision, num_warps=4)
    dx = _runtime.empty(x.shape, x.dtype, device) if need["x"] else None
    ddt = _runtime.empty((dims.batch, dims.seqlen, h), torch.float32, device) if need_da else None
    scratch = _runtime.buffer((4, n_rows, h, q), torch.float32, device)
    dtp, cs, edge, dcs = scratch.unbind(0)
    part = _runtime.buffer((n_rows, h, block_p + 2), torch.float32, device)
    D_arg, stride_D = d_operand(D, A)
    init_arg, init_strides = init_operand(initial_states, x)
    common = dict(CHUNK=q, T=tile, BLOCK_P=block_p, BLOCK_N=block_n, HAS_INIT=initial_states is not None,
                  IS_VARLEN=is_varlen, DOT_PRECISION=precision, MODE=mode)
    with _runtime.on_device(device):
        compiled["dx"] = _runtime.launch(_dx_kernel, (n_rows * h,), (
            x, dt, A, B, C, D_arg, dt_bias if dt_bias is not None else A, init_arg, dy, states, dstates, cb,
            _or(dx, dy), _or(ddt, part), dtp, cs, edge, dcs, part, table,
            dims.batch, dims.seqlen, h, p, n, h // g, g,
            *x.stride(), *dt.stride(), *B.stride(), *C.stride(), *stride_D, *init_strides,
            dt_lo, dt_hi), x.device, HAS_D=D is not None, HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus,
            NEED_DX=dx is not None, NEED_DA=need_da, N_SPLIT=_dx_split(block_n, block_p, x.element_size()),
            num_warps=w_dx, num_stages=s_dx, **common,
        )

    # 4. dB, dC: one fp32 slice per block of heads, summed below
    per_group = h // g
    hpb = heads_per_block or _heads_per_block(dims, n_rows, device)
    n_hb = -(-per_group // hpb)
    bc_shape = (n_hb, dims.batch, dims.seqlen, g, n)
    dB_buf = _runtime.empty(bc_shape, torch.float32, device) if need_bc else None
    dC_buf = _runtime.empty(bc_shape, torch.float32, device) if need_bc else None
    if need_bc:
        with _runtime.on_device(device):
            compiled["dbc"] = _runtime.launch(_dbc_kernel, (n_rows * g * n_hb,), (
                x, B, C, init_arg, dy, states, dstates, dB_buf, dC_buf, dtp, cs, table,
                dims.batch, dims.seqlen, h, p, n, g, per_group, hpb, n_hb,
                *x.stride(), *B.stride(), *C.stride(), *init_strides, *dB_buf.stride()[:4]), x.device,
                num_warps=w_bc, num_stages=s_bc, **{**common, "MODE": ROUND if mode == SPLIT else mode},
            )

    dB = dB_buf.sum(0).to(B.dtype) if need["B"] else None
    dC = dC_buf.sum(0).to(C.dtype) if need["C"] else None
    sums = part.sum(0)  # (nheads, BLOCK_P + 2), programs summed in a fixed order
    dA = sums[:, block_p].to(A.dtype, copy=True) if need["A"] else None
    ddt_bias = sums[:, block_p + 1].to(dt_bias.dtype, copy=True) if need["dt_bias"] else None
    dD = None
    if need["D"]:
        dD = (sums[:, :p] if D.dim() == 2 else sums[:, :p].sum(1)).to(D.dtype, copy=True)
    if dinit is not None:
        dinit = dinit.to(initial_states.dtype)
    ddt = ddt.to(dt.dtype) if need["dt"] else None
    return [dx, ddt, dA, dB, dC, dD, dz, ddt_bias, dinit]


compiled = {}  # the kernels of the last call by launch: n_regs, n_spills, metadata.shared (for tuning)


__all__ = ["ssd_backward", "ssd_backward_parallel", "ROUND", "SPLIT", "TF32"]
