"""ssd_scan backward, recurrent form (v1): one launch that recomputes the chunk states, one that
computes every gradient with a sweep of sub-chunks per chunk, and in some cases one for the state gradients' chain
between them. `ops/ssd/backward.py` picks it for
long inputs with many chunks per head, where it is faster than the chunk-parallel form.

Launch 1 (ops/ssd/forward.py, `entering_states`): the forward kernel without its output sweep
stores the state entering every chunk, H_in [N, P] per (chunk, head): the forward's chain again,
reading x, B and dt once (with many chains, a program sweeps a span of chunks and stores each
chunk's entering state on the way). Nothing but the inputs (and y before the z gate) is kept from the forward.

Launch 2 (`_dstates_kernel`, where `chain_launch` says so: few chains, or z): the gradient chain alone, run
backwards, as the chunk-parallel form's launch 2: per (chunk, head) the chunk's own share of the state gradient,
dH_in = exp(sum dt A) dH_out + sum_i exp(cs_i) C_i dy_i^T handed from chunk k to chunk k-1 (tickets in reverse
chunk order), dH_out of every chunk stored (fp32); on the way dD's shares, dz, and with z the gated dy, which
launch 3 then reads instead of dout and z.

Launch 3, by default (`TILES`): ops/ssd/backward_tiles.py's gradient launches in tiles, after launch 2, with no state
carried through a loop. Otherwise:

Launch 3 (`_ssd_bwd_kernel`, "the sweeps"): one program per (chunk, head), whole headdim. Programs take tickets in
*reverse* chunk order (last chunk position first), because the state gradient flows backwards. Without
launch 2, dH is handed from chunk k to chunk k-1 inside this launch the way states were handed forward (one
slot and one flag per chain; a program only waits on a ticket taken before its own). Each program, with Q
tokens in sub-chunks of SUB:

  0. (early publish, without launch 2; a tuning option now) sums the chunk's own share of dH_in, waits for
     dH_out, hands dH_in on;
  1. sweeps the sub-chunks forward with the running state H (from H_in): dC, and the row part
     of the gradient with respect to the cumulative decays;
  2. reads dH_out (launch 2's), or (late publish) waits for it;
  3. sweeps the sub-chunks backwards with the running state gradient dH (from dH_out): dx, dB,
     dz, dt (through the decays, softplus and the clamp), and the program's shares of dA and
     dt_bias; dH arrives at the chunk start as dH_in, which is handed on (late publish) or is
     the gradient of initial_states (chunk 0).

dD, without launch 2: `_dD_kernel`, sum of dy x over the tokens (in the gradient kernel its per-sub-chunk
reduction cost 1.1 ms of spills at 8x4K).

The decay gradient. With cs the cumulative sum of a = dt A and G_ij the share of output i that
token j sends through exp(cs_i - cs_j) (i >= j, "pair (i, j)"), a_k scales every pair with
j < k <= i. Writing dcs_i = (sum of pairs whose later end is i) - (sum of pairs whose earlier end
is i), da_k = sum_{i >= k} dcs_i within a chunk plus the pairs that jump over the whole chunk and
those leaving it, which together are <dH_out, H_end> (H_end: the state after the chunk). The
pairs with one end in an earlier sub-chunk or chunk are the running-state terms, which is why
sweep 1 (running H) gives the row sums and sweep 3 (running dH) the column sums.

dB and dC sum over the heads of a group: float atomics into an fp32 buffer. (The deterministic mode runs the tiles
with their sums in slots where they apply, and the chunk-parallel form of ops/ssd/backward.py, which has no float
atomics, elsewhere.)
"""

from __future__ import annotations

import dataclasses
import math
import os

import torch
import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.checks import SSDDims
from flashssm._runtime import workspace
from flashssm.ops.triton_common import (fp16_scale, process_dt, process_dt_grad, silu_grad, store_tile,
                                        take_ticket)
from flashssm.ops.ssd.forward import (_block_n, _chunk_decays, _chunk_rows, _decays, _dot_precision, _group,
                                      _resident_programs, _state_row, chunk_of, chunk_rows, d_operand,
                                      entering_states, init_operand, many_chains, new_states, states_block_p,
                                      states_fit, states_shape, states_units, stores_states, sweep_states,
                                      varlen_state_rows, varlen_table)


# How products with a computed operand (decays, weights, states, their gradients) treat it when the
# inputs are 16-bit: rounded to the input dtype, split into two 16-bit parts (two products: about 16
# mantissa bits, against tf32's 10), or multiplied with the input operand widened to fp32 (TF32: at
# DOT_PRECISION, which is tf32 for 16-bit inputs). fp32 inputs take ROUND (a no-op rounding: torch's
# matmul precision), float64 ones (gradcheck) TF32 (fp32 products, "ieee").
ROUND, SPLIT, TF32 = 0, 1, 2
# SPLIT: the products that split (the kernel's SPLIT_MASK; the others round), by bit: 1 dH_in's early share
# (dy exp), 2 dC from the running state (H), 4 dC's own pairs (w), 8 the state update (x w), 16 d(dt x)
# from the running state gradient (dH), 32 d(dt x)'s own pairs (m), 64 dB from dH, 128 dB's own pairs,
# 256 the state gradient's update (dy exp). The decay gradient depends on 1, 2, 8, 16 and 256 (SPLIT_DECAY).
SPLIT_ALL, SPLIT_DECAY = 511, 1 | 2 | 8 | 16 | 256


@triton.jit
def _mm_cl(c, v, acc, MODE: tl.constexpr, DOT_PRECISION: tl.constexpr, SPLIT_THIS: tl.constexpr = 1):
    """acc + c @ v, with c computed (fp32) and v an operand in the input dtype (SPLIT_THIS 0: a SPLIT
    product rounds instead)."""
    if MODE == 2:  # (if/else, not an early return: Triton compiles the code after a static return too)
        acc = tl.dot(c.to(tl.float32), v.to(tl.float32), acc=acc, input_precision=DOT_PRECISION)
    elif v.dtype == tl.float16:  # (c scaled into fp16's normal range first: `fp16_scale`)
        scale = fp16_scale(c)
        c = c * (1.0 / scale)
        hi = c.to(v.dtype)
        part = tl.dot(hi, v, input_precision=DOT_PRECISION)
        if MODE == 1:
            if SPLIT_THIS:
                part = tl.dot((c - hi.to(tl.float32)).to(v.dtype), v, acc=part, input_precision=DOT_PRECISION)
        acc += scale * part
    else:
        hi = c.to(v.dtype)
        acc = tl.dot(hi, v, acc=acc, input_precision=DOT_PRECISION)
        if MODE == 1:
            if SPLIT_THIS:
                acc = tl.dot((c - hi.to(tl.float32)).to(v.dtype), v, acc=acc, input_precision=DOT_PRECISION)
    return acc


@triton.jit
def _mm_cr(v, c, acc, MODE: tl.constexpr, DOT_PRECISION: tl.constexpr, SPLIT_THIS: tl.constexpr = 1):
    """acc + v @ c, with v an operand in the input dtype and c computed (fp32) (SPLIT_THIS as _mm_cl's), or c a
    stored fp16 tile over its unit (scaled states: exact in fp16, the caller multiplies by the unit)."""
    if MODE == 2:
        acc = tl.dot(v.to(tl.float32), c.to(tl.float32), acc=acc, input_precision=DOT_PRECISION)
    elif c.dtype == tl.float16:
        acc = tl.dot(v, c, acc=acc, input_precision=DOT_PRECISION)
    elif v.dtype == tl.float16:
        scale = fp16_scale(c)
        c = c * (1.0 / scale)
        hi = c.to(v.dtype)
        part = tl.dot(v, hi, input_precision=DOT_PRECISION)
        if MODE == 1:
            if SPLIT_THIS:
                part = tl.dot(v, (c - hi.to(tl.float32)).to(v.dtype), acc=part, input_precision=DOT_PRECISION)
        acc += scale * part
    else:
        hi = c.to(v.dtype)
        acc = tl.dot(v, hi, acc=acc, input_precision=DOT_PRECISION)
        if MODE == 1:
            if SPLIT_THIS:
                acc = tl.dot(v, (c - hi.to(tl.float32)).to(v.dtype), acc=acc, input_precision=DOT_PRECISION)
    return acc


@triton.jit
def _mm_vv(a, b, MODE: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """a @ b of two operands (inputs, or dy in the product of dy and x): widened to fp32 in the TF32 mode."""
    if MODE == 2:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision=DOT_PRECISION)
    else:
        out = tl.dot(a, b, input_precision=DOT_PRECISION)
    return out


@triton.jit
def _dy_of(dout_base, z_base, stride_do_t, stride_do_p, stride_z_t, stride_z_p, t, offs_p, mask_tp,
           HAS_Z: tl.constexpr):
    """The gradient reaching y before the gate, fp32 [SUB, BLOCK_P]; and z (0 without a gate)."""
    dout = tl.load(dout_base + t[:, None] * stride_do_t + offs_p[None, :] * stride_do_p,
                   mask=mask_tp, other=0.0).to(tl.float32)
    if HAS_Z:
        zv = tl.load(z_base + t[:, None] * stride_z_t + offs_p[None, :] * stride_z_p,
                     mask=mask_tp, other=0.0).to(tl.float32)
        return dout * zv * tl.sigmoid(zv), dout, zv
    return dout, dout, dout * 0.0


@triton.jit
def _reverse_program(counter_ptr, n_programs, table_ptr, batch, seqlen, nheads, heads_per_group, n_rows,
                     CHUNK: tl.constexpr, IS_VARLEN: tl.constexpr):
    """The (chunk, head) of a program of the state gradients' chain: tickets in launch order, chunk rows
    backwards (the last chunk position first). Returns head, chunk row, chunk_of's place (batch row, sequence, k,
    first token, length, chunks in the sequence), the chain (hand-over slot and flag) and the group."""
    ticket = take_ticket(counter_ptr, n_programs)
    h = ticket % nheads
    rest = n_rows - 1 - ticket // nheads
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    return h, rest, b, seq, k, start, length, n_chunks, lane * nheads + h, h // heads_per_group


@triton.jit
def _hand_over_places(slot_ptr, dinit_ptr, chain, seq, h64, nheads, headdim, dstate, offs_p, offs_n,
                      BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    """Where a chain's state gradient is handed over ([BLOCK_N, BLOCK_P] fp32 in its slot) and where chunk 0
    stores initial_states' gradient ((seqs, nheads, headdim, dstate) fp32), for _receive and _hand_back."""
    slot = slot_ptr + chain * (BLOCK_P * BLOCK_N) + offs_n[:, None] * BLOCK_P + offs_p[None, :]
    dinit = (dinit_ptr + seq.to(tl.int64) * (nheads * headdim * dstate) + h64 * (headdim * dstate)
             + offs_p[None, :] * dstate + offs_n[:, None])
    return slot, dinit


@triton.jit
def _ssd_bwd_kernel(
    x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, z_ptr, dt_bias_ptr, init_ptr, dout_ptr, ypre_ptr, dfinal_ptr,
    states_ptr, dstates_ptr, dx_ptr, ddt_ptr, dB_ptr, dC_ptr, dz_ptr, dinit_ptr, rowterm_ptr, part_ptr,
    counter_ptr, flag_ptr, slot_ptr, table_ptr,
    batch, seqlen, nheads, headdim, dstate, heads_per_group, n_rows, n_programs,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_B_b, stride_B_t, stride_B_g, stride_B_n,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_z_b, stride_z_t, stride_z_h, stride_z_p,
    stride_do_b, stride_do_t, stride_do_h, stride_do_p,
    stride_yp_b, stride_yp_t, stride_yp_h, stride_yp_p,
    stride_dB_b, stride_dB_t, stride_dB_g,  # dB and dC buffers: (batch, seqlen, g, N) fp32
    stride_D_h, stride_D_p,
    stride_init_s, stride_init_h, stride_init_p, stride_init_n,
    stride_df_s, stride_df_h, stride_df_p, stride_df_n,
    dt_lo, dt_hi,
    CHUNK: tl.constexpr, SUB: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr,
    HAS_INIT: tl.constexpr, HAS_DFINAL: tl.constexpr, IS_VARLEN: tl.constexpr, EARLY_PUBLISH: tl.constexpr,
    DOT_PRECISION: tl.constexpr, MODE: tl.constexpr, SPLIT_MASK: tl.constexpr, NEED_DX: tl.constexpr,
    NEED_DDT: tl.constexpr, NEED_DB: tl.constexpr, NEED_DC: tl.constexpr, NEED_DZ: tl.constexpr,
    NEED_DINIT: tl.constexpr, DH_GIVEN: tl.constexpr, DD_IN_KERNEL: tl.constexpr,
):
    h, rest, b, seq, k, start, length, n_chunks, chain, g = _reverse_program(
        counter_ptr, n_programs, table_ptr, batch, seqlen, nheads, heads_per_group, n_rows, CHUNK, IS_VARLEN)

    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, SUB)
    mask_p = offs_p < headdim
    mask_n = offs_n < dstate
    mask_np = mask_n[:, None] & mask_p[None, :]
    in_dtype = x_ptr.dtype.element_ty
    # dy as a product operand: fp32 in the TF32 mode, else rounded to the input dtype once (as the
    # chunk-parallel form stores it); the other computed operands go through _mm_cl / _mm_cr
    op_dtype = in_dtype
    if MODE == 2:
        op_dtype = tl.float32
    causal = offs_s[:, None] >= offs_s[None, :]

    A = tl.load(A_ptr + h).to(tl.float32)
    dt_bias = 0.0
    if HAS_DT_BIAS:
        dt_bias = tl.load(dt_bias_ptr + h).to(tl.float32)
    if HAS_D:
        D = tl.load(D_ptr + h * stride_D_h + offs_p * stride_D_p, mask=mask_p, other=0.0).to(tl.float32)
    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    x_base = x_ptr + b64 * stride_x_b + h64 * stride_x_h + start * stride_x_t
    dt_base = dt_ptr + b64 * stride_dt_b + h64 * stride_dt_h + start * stride_dt_t
    B_base = B_ptr + b64 * stride_B_b + g.to(tl.int64) * stride_B_g + start * stride_B_t
    C_base = C_ptr + b64 * stride_C_b + g.to(tl.int64) * stride_C_g + start * stride_C_t
    z_base = z_ptr + b64 * stride_z_b + h64 * stride_z_h + start * stride_z_t
    do_base = dout_ptr + b64 * stride_do_b + h64 * stride_do_h + start * stride_do_t
    yp_base = ypre_ptr + b64 * stride_yp_b + h64 * stride_yp_h + start * stride_yp_t
    # outputs dx, dz (like x, contiguous) and ddt ((batch, seqlen, nheads) fp32, contiguous)
    dx_base = dx_ptr + ((b64 * seqlen + start) * nheads + h64) * headdim
    dz_base = dz_ptr + ((b64 * seqlen + start) * nheads + h64) * headdim
    ddt_base = ddt_ptr + (b64 * seqlen + start) * nheads + h64
    dB_base = dB_ptr + b64 * stride_dB_b + g.to(tl.int64) * stride_dB_g + start * stride_dB_t
    dC_base = dC_ptr + b64 * stride_dB_b + g.to(tl.int64) * stride_dB_g + start * stride_dB_t
    prog_row = rest.to(tl.int64) * nheads + h64
    rowterm = rowterm_ptr + prog_row * CHUNK
    slot, dinit = _hand_over_places(slot_ptr, dinit_ptr, chain, seq, h64, nheads, headdim, dstate, offs_p, offs_n,
                                    BLOCK_P, BLOCK_N)
    is_last = k + 1 == n_chunks

    # the state entering the chunk, [BLOCK_N, BLOCK_P] (zero past dstate and headdim)
    H = tl.load(states_ptr + prog_row * (BLOCK_N * BLOCK_P) + offs_n[:, None] * BLOCK_P
                + offs_p[None, :]).to(tl.float32)
    if HAS_INIT:
        if k == 0:  # exact, whatever the states' dtype
            H = tl.load(init_ptr + seq.to(tl.int64) * stride_init_s + h64 * stride_init_h
                        + offs_p[None, :] * stride_init_p + offs_n[:, None] * stride_init_n,
                        mask=mask_np, other=0.0).to(tl.float32)

    if EARLY_PUBLISH:
        # 0. the chunk's own share of dH_in, then dH_out, then hand dH_in on at once
        dH_in = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)
        total = 0.0
        for s0 in range(0, length, SUB):
            t = s0 + offs_s
            mask_t = t < length
            mask_tp = mask_t[:, None] & mask_p[None, :]
            dt, cs, last = _chunk_decays(dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                                         HAS_DT_BIAS, DT_SOFTPLUS)
            C_s = tl.load(C_base + t[:, None] * stride_C_t + offs_n[None, :] * stride_C_n,
                          mask=mask_t[:, None] & mask_n[None, :], other=0.0)
            dy, _, _ = _dy_of(do_base, z_base, stride_do_t, stride_do_p, stride_z_t, stride_z_p, t, offs_p, mask_tp,
                              HAS_Z)
            if MODE != 2:  # dy rounded as the sweeps below round it: every path sees the same dy
                dy = dy.to(op_dtype).to(tl.float32)
            dH_in = _mm_cr(tl.trans(C_s), dy * tl.exp(total + cs)[:, None], dH_in, MODE, DOT_PRECISION,
                           SPLIT_MASK & 1)
            total += last
        dH_out = _receive(slot, flag_ptr + chain, dfinal_ptr, seq, h64, offs_p, offs_n, mask_np, k, n_chunks,
                          is_last, stride_df_s, stride_df_h, stride_df_p, stride_df_n, HAS_DFINAL)
        _hand_back(dH_out * tl.exp(total) + dH_in, slot, dinit, mask_np, flag_ptr + chain, k, n_chunks, NEED_DINIT)

    # 1. forward sweep with the running state: dC and the row part of the decay gradient
    for s0 in range(0, length, SUB):
        t = s0 + offs_s
        mask_t = t < length
        mask_tp = mask_t[:, None] & mask_p[None, :]
        mask_tn = mask_t[:, None] & mask_n[None, :]
        dt, cs, last = _chunk_decays(dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                                     HAS_DT_BIAS, DT_SOFTPLUS)
        x_s = tl.load(x_base + t[:, None] * stride_x_t + offs_p[None, :] * stride_x_p, mask=mask_tp, other=0.0)
        B_s = tl.load(B_base + t[:, None] * stride_B_t + offs_n[None, :] * stride_B_n, mask=mask_tn, other=0.0)
        C_s = tl.load(C_base + t[:, None] * stride_C_t + offs_n[None, :] * stride_C_n, mask=mask_tn, other=0.0)
        dy, _, _ = _dy_of(do_base, z_base, stride_do_t, stride_do_p, stride_z_t, stride_z_p, t, offs_p, mask_tp,
                          HAS_Z)
        dy_in = dy.to(op_dtype)
        # the running state's share of dC_i = exp(cs_i) H^T dy_i, and of the decay gradient
        dC_state = _mm_cr(dy_in, tl.trans(H), tl.zeros((SUB, BLOCK_N), dtype=tl.float32), MODE,
                          DOT_PRECISION, SPLIT_MASK & 2) * tl.exp(cs)[:, None]
        row_part = tl.sum(dC_state * C_s.to(tl.float32), axis=1)
        tl.store(rowterm + t, row_part, mask=mask_t)
        # the sub-chunk's own pairs: dC_i += sum_{j<=i} (dy_i . x_j) exp(cs_i - cs_j) dt_j B_j
        dyx = _mm_vv(dy_in, tl.trans(x_s), MODE, DOT_PRECISION)  # [SUB (i), SUB (j)]
        w = dyx * tl.exp(tl.where(causal, cs[:, None] - cs[None, :], -float("inf"))) * dt[None, :]
        dC = _mm_cl(w, B_s, dC_state, MODE, DOT_PRECISION, SPLIT_MASK & 4)
        if NEED_DC:
            tl.atomic_add(dC_base + t[:, None] * stride_dB_t + offs_n[None, :], dC, mask=mask_tn, sem="relaxed")
        xw = x_s.to(tl.float32) * (tl.exp(last - cs) * dt)[:, None]
        H = _mm_cr(tl.trans(B_s), xw, H * tl.exp(last), MODE, DOT_PRECISION, SPLIT_MASK & 8)

    # 2. the gradient of the state after the chunk
    if DH_GIVEN:  # stored by the gradient chain's own launch (_dstates_kernel)
        dH_out = tl.load(dstates_ptr + prog_row * (BLOCK_N * BLOCK_P) + offs_n[:, None] * BLOCK_P + offs_p[None, :])
    elif not EARLY_PUBLISH:
        dH_out = _receive(slot, flag_ptr + chain, dfinal_ptr, seq, h64, offs_p, offs_n, mask_np, k, n_chunks,
                          is_last, stride_df_s, stride_df_h, stride_df_p, stride_df_n, HAS_DFINAL)
    # every pair jumping over the chunk or leaving it: the base of da for all its tokens
    carry = tl.sum(tl.sum(dH_out * H, axis=1), axis=0)

    # 3. backward sweep with the running state gradient
    dH = dH_out
    dA_acc = 0.0
    dbias_acc = 0.0
    dD_acc = tl.zeros((BLOCK_P,), dtype=tl.float32)
    n_sub = tl.cdiv(length, SUB)
    for i in range(0, n_sub):
        s0 = (n_sub - 1 - i) * SUB
        t = s0 + offs_s
        mask_t = t < length
        mask_tp = mask_t[:, None] & mask_p[None, :]
        mask_tn = mask_t[:, None] & mask_n[None, :]
        dt_raw = tl.load(dt_base + t * stride_dt_t, mask=mask_t, other=0.0).to(tl.float32)
        dt, cs, last = _chunk_decays(dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                                     HAS_DT_BIAS, DT_SOFTPLUS)
        x_s = tl.load(x_base + t[:, None] * stride_x_t + offs_p[None, :] * stride_x_p, mask=mask_tp, other=0.0)
        B_s = tl.load(B_base + t[:, None] * stride_B_t + offs_n[None, :] * stride_B_n, mask=mask_tn, other=0.0)
        C_s = tl.load(C_base + t[:, None] * stride_C_t + offs_n[None, :] * stride_C_n, mask=mask_tn, other=0.0)
        dy, dout, zv = _dy_of(do_base, z_base, stride_do_t, stride_do_p, stride_z_t, stride_z_p, t, offs_p, mask_tp,
                              HAS_Z)
        dy_in = dy.to(op_dtype)
        xf = x_s.to(tl.float32)
        to_end = tl.exp(last - cs)  # [SUB] decay from token j to the sub-chunk's end
        # what dH says about token j (its path out of the sub-chunk) ...
        bdh = _mm_cr(B_s, dH, tl.zeros((SUB, BLOCK_P), dtype=tl.float32), MODE,
                     DOT_PRECISION, SPLIT_MASK & 16) * to_end[:, None]  # [SUB, BLOCK_P]
        # ... and the sub-chunk's own pairs
        cb = tl.dot(C_s, tl.trans(B_s), input_precision=DOT_PRECISION)  # [SUB (i), SUB (j)]
        decay = tl.exp(tl.where(causal, cs[:, None] - cs[None, :], -float("inf")))
        dyx = _mm_vv(dy_in, tl.trans(x_s), MODE, DOT_PRECISION)
        m = cb * decay
        bracket = _mm_cl(tl.trans(m), dy_in, bdh, MODE, DOT_PRECISION, SPLIT_MASK & 32)  # d(dt_j x_j)
        dx = bracket * dt[:, None]
        if HAS_D:
            dx += dy * D[None, :]
            if DD_IN_KERNEL:
                dD_acc += tl.sum(dy * xf, axis=0)
        if NEED_DX:
            tl.store(dx_base + t[:, None] * (nheads * headdim) + offs_p[None, :], dx.to(dx_ptr.dtype.element_ty),
                     mask=mask_tp)
        if NEED_DZ:
            yp = tl.load(yp_base + t[:, None] * stride_yp_t + offs_p[None, :] * stride_yp_p,
                         mask=mask_tp, other=0.0).to(tl.float32)
            sig = tl.sigmoid(zv)
            dz = dout * yp * silu_grad(zv, sig)
            tl.store(dz_base + t[:, None] * (nheads * headdim) + offs_p[None, :], dz.to(dz_ptr.dtype.element_ty),
                     mask=mask_tp)
        # dB_j = dt_j (exp(last - cs_j) dH^T x_j + sum_{i>=j} (dy_i . x_j) exp(cs_i - cs_j) C_i)
        dB = _mm_cr(x_s, tl.trans(dH), tl.zeros((SUB, BLOCK_N), dtype=tl.float32), MODE,
                    DOT_PRECISION, SPLIT_MASK & 64) * to_end[:, None]
        dB = _mm_cl(tl.trans(dyx * decay), C_s, dB, MODE, DOT_PRECISION, SPLIT_MASK & 128)
        if NEED_DB:
            tl.atomic_add(dB_base + t[:, None] * stride_dB_t + offs_n[None, :], dB * dt[:, None], mask=mask_tn,
                          sem="relaxed")
        # the decay gradient: row sums (sweep 1 and the own pairs) minus column sums
        pairs = dyx * m * dt[None, :]
        col_part = tl.sum(xf * bdh, axis=1) * dt
        dcs = (tl.load(rowterm + t, mask=mask_t, other=0.0) + tl.sum(pairs, axis=1) - tl.sum(pairs, axis=0)
               - col_part)
        dcs_total = tl.sum(dcs, axis=0)
        da = carry + dcs_total - tl.cumsum(dcs, axis=0) + dcs  # sum over i >= k, and the later sub-chunks
        carry += dcs_total
        da = tl.where(mask_t, da, 0.0)
        dA_acc += tl.sum(da * dt, axis=0)
        ddt = tl.sum(bracket * xf, axis=1) + da * A
        ddt = tl.where(mask_t, process_dt_grad(ddt, dt_raw, dt_bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), 0.0)
        dbias_acc += tl.sum(ddt, axis=0)
        if NEED_DDT:
            tl.store(ddt_base + t * nheads, ddt, mask=mask_t)
        if MODE != 2:  # the rounded dy of the rows and pairs, so that the decay gradient's terms cancel exactly
            dy = dy_in.to(tl.float32)
        dH = _mm_cr(tl.trans(C_s), dy * tl.exp(cs)[:, None], dH * tl.exp(last), MODE, DOT_PRECISION,
                    SPLIT_MASK & 256)
    if not EARLY_PUBLISH and not DH_GIVEN:
        _hand_back(dH, slot, dinit, mask_np, flag_ptr + chain, k, n_chunks, NEED_DINIT)

    # this program's shares of dD, dA and d dt_bias, summed in a fixed order on the host side
    part = part_ptr + prog_row * (BLOCK_P + 2)
    tl.store(part + offs_p, dD_acc)
    tl.store(part + BLOCK_P + offs_p * 0, dA_acc + offs_p * 0.0, mask=offs_p == 0)
    tl.store(part + BLOCK_P + 1 + offs_p * 0, dbias_acc + offs_p * 0.0, mask=offs_p == 0)


@triton.jit
def _operand(v):
    """An input tile as a product operand: float64 (gradcheck under the interpreter) goes to fp32,
    the kernels' arithmetic (the interpreter loses a float64 product with an fp32 accumulator)."""
    if v.dtype == tl.float64:
        return v.to(tl.float32)
    return v


@triton.jit
def _dstates_kernel(
    dt_ptr, A_ptr, C_ptr, z_ptr, dt_bias_ptr, dout_ptr, ypre_ptr, dfinal_ptr,
    dy_ptr, dz_ptr, dstates_ptr, dinit_ptr, counter_ptr, flag_ptr, slot_ptr, table_ptr, x_ptr, dd_ptr,
    states_ptr, carry_ptr, state_rows_ptr, dunit_ptr, sunit_ptr,
    batch, seqlen, nheads, headdim, dstate, heads_per_group, n_rows, n_programs,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_z_b, stride_z_t, stride_z_h, stride_z_p,
    stride_do_b, stride_do_t, stride_do_h, stride_do_p,
    stride_yp_b, stride_yp_t, stride_yp_h, stride_yp_p,
    stride_df_s, stride_df_h, stride_df_p, stride_df_n,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    dt_lo, dt_hi,
    CHUNK: tl.constexpr, SUB: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_Z: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr, HAS_DFINAL: tl.constexpr,
    IS_VARLEN: tl.constexpr, NEED_DZ: tl.constexpr, NEED_DINIT: tl.constexpr,
    DOT_PRECISION: tl.constexpr, MODE: tl.constexpr, STORE_DY: tl.constexpr = True, ROUND_DY: tl.constexpr = False,
    NEED_DD: tl.constexpr = False, LATE: tl.constexpr = False, STATE_CHUNK: tl.constexpr = 1,
    HALVES: tl.constexpr = False, CARRY: tl.constexpr = False, SCALED: tl.constexpr = False,
    DD_ROWS: tl.constexpr = False,
):
    """The gradient chain alone, run backwards (ops/ssd/backward.py's launch 2), on the way dy (gated) and dz.
    Two forms. Early (LATE False; one chunk a program): the chunk's own share of the state gradient, then dH from
    chunk k+1 (stored: the gradient of the state after chunk k) and exp(cs_L) dH + share handed to chunk k-1.
    Late (many chains): a program sweeps a span of CHUNK tokens, the caller's chunks of STATE_CHUNK
    tokens, backwards: it waits for the gradient of the state after the span first, then carries it back through
    the span's sub-chunks, storing it at the end of each chunk, and hands on the gradient of the state entering
    the span: one hand-over (an fp32 slot written and read) a span instead of one a chunk. Packed sequences: `table_ptr`
    is the table of spans, and each chunk's row is the span's entry of `varlen_state_rows` (`state_rows_ptr`).
    HALVES (early, not varlen): a program takes two of the caller's chunks (CHUNK = 2 STATE_CHUNK), their shares
    apart, and stores dH after each (the rows of the caller's chunks) once dH after the second has come.
    STORE_DY False: dy is not written; ROUND_DY: the products take dy rounded to the input dtype, as the chain
    form's sweeps do; NEED_DD: the program's share of D's gradient, sum of dy * x (fp32 dy), to dd (rows, nheads,
    BLOCK_P). CARRY (the states already in memory, `states_ptr`, in dH's rows): with each dH stored, the decay
    gradient's carry <dH, H> of its row (dH as stored, unscaled: the tiles' dA launch scales it by exp(cs_L)), which
    the paths launch would otherwise compute, reading dH a second time; the state is loaded before the sub-chunk's
    products that the store follows (the late form) or after the hand-over (the others). SCALED (fp16 inputs'
    tiles, `scaled_states`): dH stored over its tile's unit, which goes to dunit_ptr (rows, nheads); the states, read
    for the carry, likewise (their units at sunit_ptr)."""
    h, rest, b, seq, k, start, length, n_chunks, chain, g = _reverse_program(
        counter_ptr, n_programs, table_ptr, batch, seqlen, nheads, heads_per_group, n_rows, CHUNK, IS_VARLEN)

    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, SUB)
    mask_p = offs_p < headdim
    mask_n = offs_n < dstate
    mask_np = mask_n[:, None] & mask_p[None, :]
    A = tl.load(A_ptr + h).to(tl.float32)
    dt_bias = 0.0
    if HAS_DT_BIAS:
        dt_bias = tl.load(dt_bias_ptr + h).to(tl.float32)
    b64 = b.to(tl.int64)
    h64 = h.to(tl.int64)
    dt_base = dt_ptr + b64 * stride_dt_b + h64 * stride_dt_h + start * stride_dt_t
    C_base = C_ptr + b64 * stride_C_b + g.to(tl.int64) * stride_C_g + start * stride_C_t
    z_base = z_ptr + b64 * stride_z_b + h64 * stride_z_h + start * stride_z_t
    do_base = dout_ptr + b64 * stride_do_b + h64 * stride_do_h + start * stride_do_t
    yp_base = ypre_ptr + b64 * stride_yp_b + h64 * stride_yp_h + start * stride_yp_t
    # dy and dz: contiguous like x
    row_base = ((b64 * seqlen + start) * nheads + h64) * headdim
    prog_row = rest.to(tl.int64) * nheads + h64
    slot, dinit = _hand_over_places(slot_ptr, dinit_ptr, chain, seq, h64, nheads, headdim, dstate, offs_p, offs_n,
                                    BLOCK_P, BLOCK_N)
    is_last = k + 1 == n_chunks
    tile = offs_n[:, None] * BLOCK_P + offs_p[None, :]

    if LATE:  # run: the gradient of the state after the current sub-chunk
        run = _receive(slot, flag_ptr + chain, dfinal_ptr, seq, h64, offs_p, offs_n, mask_np, k, n_chunks,
                       is_last, stride_df_s, stride_df_h, stride_df_p, stride_df_n, HAS_DFINAL)
    else:  # run: the chunk's own share
        run = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)
    run1 = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)  # (HALVES: the first half's share)
    total1 = 0.0
    dd_acc = tl.zeros((SUB, BLOCK_P), dtype=tl.float32)
    dd_rows = tl.zeros((SUB,), dtype=tl.float32)
    x_base = x_ptr + b64 * stride_x_b + h64 * stride_x_h + start * stride_x_t
    total = 0.0
    n_sub = tl.maximum(tl.cdiv(length, SUB), 1)  # (an empty sequence still stores its chunk's dH)
    for i in range(0, n_sub):
        s0 = i * SUB
        if LATE:
            s0 = (n_sub - 1 - i) * SUB
        t = s0 + offs_s
        mask_t = t < length
        mask_tp = mask_t[:, None] & mask_p[None, :]
        if LATE:  # (the last sub-chunk of a chunk: dH after that chunk is stored, and its carry)
            stores = ((s0 + SUB) % STATE_CHUNK == 0) | (s0 + SUB >= n_sub * SUB)  # (i == 0: the span's last)
            store_row = _state_row(state_rows_ptr, rest, k, b, batch, s0, CHUNK, STATE_CHUNK, IS_VARLEN) * nheads + h64
            if CARRY:  # (a load masked off where this sub-chunk stores nothing: no traffic)
                H_c = tl.load(states_ptr + store_row * (BLOCK_N * BLOCK_P) + tile,
                              mask=tile < stores.to(tl.int32) * (BLOCK_N * BLOCK_P), other=0.0)
        dt, cs, last = _chunk_decays(dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                                     HAS_DT_BIAS, DT_SOFTPLUS)
        C_s = _operand(tl.load(C_base + t[:, None] * stride_C_t + offs_n[None, :] * stride_C_n,
                      mask=mask_t[:, None] & mask_n[None, :], other=0.0))
        dy = tl.load(do_base + t[:, None] * stride_do_t + offs_p[None, :] * stride_do_p,
                     mask=mask_tp, other=0.0).to(tl.float32)
        if HAS_Z:
            zv = tl.load(z_base + t[:, None] * stride_z_t + offs_p[None, :] * stride_z_p,
                         mask=mask_tp, other=0.0).to(tl.float32)
            sig = tl.sigmoid(zv)
            if NEED_DZ:
                yp = tl.load(yp_base + t[:, None] * stride_yp_t + offs_p[None, :] * stride_yp_p,
                             mask=mask_tp, other=0.0).to(tl.float32)
                tl.store(dz_ptr + row_base + t[:, None] * (nheads * headdim) + offs_p[None, :],
                         (dy * yp * silu_grad(zv, sig)).to(dz_ptr.dtype.element_ty), mask=mask_tp)
            dy = dy * zv * sig
        if STORE_DY:
            tl.store(dy_ptr + row_base + t[:, None] * (nheads * headdim) + offs_p[None, :],
                     dy.to(dy_ptr.dtype.element_ty), mask=mask_tp)
        if NEED_DD:
            dyx = dy * tl.load(x_base + t[:, None] * stride_x_t + offs_p[None, :] * stride_x_p, mask=mask_tp,
                               other=0.0).to(tl.float32)
            if DD_ROWS:  # (D a value a head: each token's sum along the row; no [SUB, BLOCK_P] accumulator)
                dd_rows += tl.sum(dyx, axis=1)
            else:
                dd_acc += dyx
        if ROUND_DY:  # the chain form's rounding: its sweeps see this dy too
            dy = dy.to(dy_ptr.dtype.element_ty).to(tl.float32)
        if LATE:
            if stores:  # the last sub-chunk of a chunk: dH after that chunk
                dH_st, unit = _store_dh(dstates_ptr, dunit_ptr, store_row, tile, run, BLOCK_N * BLOCK_P, SCALED)
                if CARRY:
                    _store_carry(carry_ptr + store_row, H_c, dH_st, unit, sunit_ptr + store_row, SCALED)
            run = _mm_cr(tl.trans(C_s), dy * tl.exp(cs)[:, None], run * tl.exp(last), MODE, DOT_PRECISION)
        else:
            if HALVES:
                if s0 == STATE_CHUNK:  # the second half: its own share from the half's start
                    run1 = run
                    total1 = total
                    run = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)
                    total = 0.0
            run = _mm_cr(tl.trans(C_s), dy * tl.exp(total + cs)[:, None], run, MODE, DOT_PRECISION)
            total += last

    if LATE:
        _hand_back(run, slot, dinit, mask_np, flag_ptr + chain, k, n_chunks, NEED_DINIT)
    else:
        dH = _receive(slot, flag_ptr + chain, dfinal_ptr, seq, h64, offs_p, offs_n, mask_np, k, n_chunks,
                      is_last, stride_df_s, stride_df_h, stride_df_p, stride_df_n, HAS_DFINAL)
        if HALVES:  # dH after the first half, then the hand-back; rows of the caller's chunks (two a program)
            if length <= STATE_CHUNK:  # (a last span of one chunk: no second half)
                run1 = run
                total1 = total
                run = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)
                total = 0.0
            dH_mid = dH * tl.exp(total) + run
            _hand_back(dH_mid * tl.exp(total1) + run1, slot, dinit, mask_np, flag_ptr + chain, k, n_chunks,
                       NEED_DINIT)
            row = (2 * k * batch + b).to(tl.int64) * nheads + h64
            dH_st, unit = _store_dh(dstates_ptr, dunit_ptr, row, tile, dH_mid, BLOCK_N * BLOCK_P, SCALED)
            if CARRY:
                _store_carry(carry_ptr + row, states_ptr + row * (BLOCK_N * BLOCK_P) + tile, dH_st, unit,
                             sunit_ptr + row, SCALED)
            if length > STATE_CHUNK:
                row += batch * nheads
                dH_st, unit = _store_dh(dstates_ptr, dunit_ptr, row, tile, dH, BLOCK_N * BLOCK_P, SCALED)
                if CARRY:
                    _store_carry(carry_ptr + row, states_ptr + row * (BLOCK_N * BLOCK_P) + tile, dH_st, unit,
                                 sunit_ptr + row, SCALED)
        else:
            _hand_back(dH * tl.exp(total) + run, slot, dinit, mask_np, flag_ptr + chain, k, n_chunks, NEED_DINIT)
            dH_st, unit = _store_dh(dstates_ptr, dunit_ptr, prog_row, tile, dH, BLOCK_N * BLOCK_P, SCALED)
            if CARRY:
                _store_carry(carry_ptr + prog_row, states_ptr + prog_row * (BLOCK_N * BLOCK_P) + tile, dH_st, unit,
                             sunit_ptr + prog_row, SCALED)
    if NEED_DD:
        if DD_ROWS:
            tl.store(dd_ptr + prog_row, tl.sum(dd_rows, axis=0))
        else:
            tl.store(dd_ptr + prog_row * BLOCK_P + offs_p, tl.sum(dd_acc, axis=0))


@triton.jit
def _store_dh(dstates_ptr, dunit_ptr, row, tile, dH, TILE: tl.constexpr, SCALED: tl.constexpr):
    """dH (fp32) as the gradient of the state after chunk row `row` (rows x nheads + head): in dstates' dtype, or
    (SCALED) fp16 over its unit (`tile_unit`), which goes to dunit_ptr[row]. Returns (the tile as stored, its
    unit)."""
    return store_tile(dstates_ptr, row * TILE + tile, dunit_ptr, row, dH, SCALED)


@triton.jit
def _store_carry(carry_at, H, dH, dH_unit, H_unit_at, SCALED: tl.constexpr):
    """The decay gradient's carry of a (chunk, head), <dH, H> in fp32, to carry_at; H the state, or where to load it
    (the forms that hand over before they store: loaded after the hand-over, off the chain's path). SCALED: both
    tiles are stored over their units (dH's given, H's at H_unit_at)."""
    if H.dtype.is_ptr():
        H = tl.load(H)
    carry = tl.sum(tl.sum(H.to(tl.float32) * dH.to(tl.float32), axis=1), axis=0)
    if SCALED:
        carry = carry * (dH_unit * tl.load(H_unit_at))
    tl.store(carry_at, carry)


@triton.jit
def _receive(slot, flag, dfinal_ptr, seq, h64, offs_p, offs_n, mask_np, k, n_chunks, is_last,
             stride_df_s, stride_df_h, stride_df_p, stride_df_n, HAS_DFINAL: tl.constexpr):
    """The gradient of the state after chunk k: from chunk k+1's program, or final_states' gradient."""
    if is_last:
        if HAS_DFINAL:
            dH_out = tl.load(dfinal_ptr + seq.to(tl.int64) * stride_df_s + h64 * stride_df_h
                             + offs_p[None, :] * stride_df_p + offs_n[:, None] * stride_df_n,
                             mask=mask_np, other=0.0).to(tl.float32)
        else:
            dH_out = tl.zeros(mask_np.shape, dtype=tl.float32)
    else:
        want = n_chunks - 1 - k  # chunks after k that have handed back
        seen = tl.atomic_add(flag, 0, sem="acquire")
        while seen != want:
            seen = tl.atomic_add(flag, 0, sem="acquire")
        dH_out = tl.load(slot, cache_modifier=".cg")
    return dH_out


@triton.jit
def _hand_back(dH_in, slot, dinit, mask_np, flag, k, n_chunks, NEED_DINIT: tl.constexpr):
    """Hand the gradient of the state entering chunk k to chunk k-1, or store initial_states' gradient."""
    if k == 0:
        if NEED_DINIT:
            tl.store(dinit, dH_in, mask=mask_np)
        if n_chunks > 1:
            tl.atomic_xchg(flag, 0, sem="relaxed")  # leave the flag clean for the next launch
    else:
        tl.store(slot, dH_in)
        tl.debug_barrier()
        tl.atomic_xchg(flag, n_chunks - k, sem="release")


# SPLIT, splitting the products the decay gradient depends on: on an H100 (benchmarks/notes/ssd_backward.md,
# sixth session) its gradient errors match mamba_ssm's and the chunk-parallel form's (TF32 had 30x their
# error in dA and dt_bias at fp16), and with 16-bit operands leaving room for SUB 32 it is 2-5 % faster than
# TF32 at SUB 16. Splitting every product (SPLIT_ALL) cuts dx, dB and dC's errors by ~15 % for +12 % time.
DEFAULT_MODE = SPLIT
DEFAULT_SPLIT_MASK = SPLIT_DECAY
# One stage: the gradient kernel is latency-bound at two programs an SM (255 registers) and its loads hit L2
# (86 %), so the two-stage cp.async pipeline bought nothing and cost shared memory and spills (sm_90: 820 ->
# 704 bytes); on an H100 the backward went 7.30 -> 6.25 ms at 8x4K and 8.08 -> 7.14 at 1x32K (2.7B shape, D,
# dt_bias, softplus; benchmarks/notes/ssd_backward.md, tenth session), the same bits.
STAGES = 1


def chain_launch(early: bool, has_z: bool) -> bool:
    """Whether the gradient chain runs as a launch of its own (_dstates_kernel: dH after every chunk stored, dD
    summed, and with z the gated dy and dz written) rather than inside the gradient kernel. On an H100 (2.7B shape,
    bf16; benchmarks/notes/ssd_backward.md, eleventh session), backward alone: with few chains (early publish) the
    kernel's own pass 0 and hand-over cost more than the launch (1x32K 6.05 -> 5.43 ms without options, 6.98 ->
    5.69 with D, dt_bias, softplus); with z the gradient kernel recomputed the gate in every sweep (8x4K 12.55 ->
    6.25 ms, 1x32K 15.40 -> 6.24); with many chains and no z the launch costs more than it saves (8x4K, every
    kernel: 5.10 -> 5.45 ms)."""
    return early or has_z


# The chain launch: sub-chunks of 64 (32: 0.674 -> 0.557 ms at 1x32K, 0.758 -> 0.662 at 8x4K; 128 was 1.6x slower
# with z), 4 warps, two stages. Its span form (chain_span) at 8x4K of the 2.7B shape, H100, bf16: spans of 2, 4, 8
# chunks 0.591 (a program a chunk) -> 0.450, 0.373, 0.330 ms, with z 1.237 -> 1.251, 1.138, 1.081
# (benchmarks/notes/ssd_backward.md, fourteenth session).
DSTATES_WARPS, DSTATES_STAGES, DSTATES_SUB = 4, 2, 64


# The chain launch's sub-chunk without z and without D's share, where its tiles are at most 128 x 64 (dstate <= 128,
# headdim <= 64): 128 (H100, 2.7B shape; span form, 8x4K: 0.330 -> 0.262 ms; early form 1x32K 0.488 -> 0.446, 2x16K
# 0.478 -> 0.414, 1x8K 0.132 -> 0.119). With z the gate's tiles spill (8x4K 1.08 -> 2.29 ms), with a per-element
# D's share (its [SUB, headdim] accumulator) the early form was slower (1x32K 0.584 -> 0.637, 1x8K 0.154 -> 0.164);
# a per-head D's share as row sums steps wide (CHAIN_DD_ROWS).
DSTATES_SUB_WIDE = 128


def narrow_states(dtype: torch.dtype, mode: int) -> bool:
    """Whether the tiles keep the states and their gradients in memory in the input dtype (`dtype`), not fp32: where
    their products round them to it anyway (ROUND), with 16-bit inputs (half the bytes to write and read, no
    conversions in the tiles kernel). fp16's are scaled (`scaled_states`)."""
    return mode == ROUND and dtype in (torch.bfloat16, torch.float16)


def scaled_states(dtype: torch.dtype, mode: int) -> bool:
    """Whether the tiles' 16-bit states and state gradients are fp16 stored over a power of two per (chunk row, head)
    tile (`forward.new_states`). Where dt is small the states are fp16 subnormals (H ~ dt B x: 1e-5 at dt 1e-6), which
    a plain fp16 copy rounds to a few bits (fp16, dt ~ 1e-6, chunks of 32: dC 4.1x the cost of rounding the float64
    gradient to fp16, against 1.2x with fp32 states; fifty-sixth session); over the tile's unit every value within
    2^14 of the tile's largest keeps fp16's 11 bits, and the readers take the stored tile as their product's fp16
    operand as it is, multiplying the product by the unit (the fp32 states were scaled to fp16 by the products
    anyway, `_mm_cl`, `_mm_cr`). Half of fp32's bytes: the tiles' smaller chunks and the forward's stored states
    again at bf16's memory (sixty-second session)."""
    return narrow_states(dtype, mode) and dtype == torch.float16


def tiles_states_dtype(dtype: torch.dtype, state_dtype: torch.dtype | None, mode: int) -> torch.dtype:
    """The dtype the tiles keep the states in memory in, for inputs of `dtype` (`narrow_states`; else the states'
    dtype asked for, fp32 by default)."""
    return dtype if narrow_states(dtype, mode) else (state_dtype or torch.float32)


def chain_sub(narrow: bool, chunk_size: int, block_n: int, block_p: int) -> int:
    """Tokens a step of the chain launch (never more than a chunk: the span form stores dH at chunk ends); `narrow`:
    with z or a per-element D's share (its accumulator; a per-head D's row sums step wide)."""
    wide = not narrow and block_n <= 128 and block_p <= 64
    return min(DSTATES_SUB_WIDE if wide else DSTATES_SUB, chunk_size)


def chain_span(dims: SSDDims, device: torch.device) -> int:
    """The chain launch's form: 0, a program a chunk that hands over early (its own share first, then the wait:
    the chain stays short), or G >= 1, a program sweeping a span of G chunks that waits first and hands over once,
    where the chains are many (as for the forward's late publish; packed sequences too, each span within one
    sequence): the fp32 hand-over slots are written and read once a span instead of once a chunk. G is the forward's
    span (`_group`)."""
    if not many_chains(dims, device) or (dims.cu_seqlens is not None and not CHAIN_SPANS_PACKED):
        return 0
    return _group(dims, _resident_programs(device))


# Packed sequences with many chains take the span form too (and with it the tiles' smaller chunks, `tiles_chunk`): a
# table of spans, each chunk's dH at its chunk-table row. False: a program a chunk handing over early, in the forward's
# chunks (A/B; the state recompute, where one runs, publishes late with many chains either way).
CHAIN_SPANS_PACKED = True


# The chain launch's share of a per-head D's gradient (a Mamba-2 layer's D) as each token's row sum, which needs no
# [SUB, headdim] fp32 accumulator and so lets the launch step as wide as without D (H200, 2.7B shape, D, dt_bias,
# softplus; benchmarks/notes/ssd_backward.md, sixty-fifth session): the launch 0.498 -> 0.486 ms at 8x4K, 0.627 ->
# 0.541 at 1x32K (row sums at the narrow step: 0.487, 0.554). False: the accumulator at the narrow step (A/B).
CHAIN_DD_ROWS = True


# dD summed inside the gradient kernel (a reduction of every sub-chunk, through its sweeps: at 8x4K with D 1.1 ms of
# spills and instructions) or outside it: by the chain launch where there is one, else by _dD_kernel (reads dout, z
# and x once more: 0.38 ms at 8x4K). In the kernel only for A/B runs (dd_in_kernel=True).
DD_IN_KERNEL = False


@triton.jit
def _dD_kernel(dout_ptr, z_ptr, x_ptr, part_ptr, n_tokens, seqlen, nheads, headdim,
               stride_do_b, stride_do_t, stride_do_h, stride_do_p,
               stride_z_b, stride_z_t, stride_z_h, stride_z_p,
               stride_x_b, stride_x_t, stride_x_h, stride_x_p,
               ROWS: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_P: tl.constexpr, HAS_Z: tl.constexpr,
               F64: tl.constexpr):
    """D's gradient, sum of dy * x over ROWS (batch, token) rows for one head, dy gated by z: one program per
    (block of rows, head), its partial sums [BLOCK_P] to part (row blocks, nheads, BLOCK_P)."""
    ACC: tl.constexpr = tl.float64 if F64 else tl.float32
    blk = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    offs_p = tl.arange(0, BLOCK_P)
    mask_p = offs_p < headdim
    acc = tl.zeros((BLOCK_T, BLOCK_P), dtype=ACC)
    for r0 in range(0, ROWS, BLOCK_T):
        r = blk.to(tl.int64) * ROWS + r0 + tl.arange(0, BLOCK_T)
        mask = (r < n_tokens)[:, None] & mask_p[None, :]
        bi = r // seqlen
        ti = r % seqlen
        dy = tl.load(dout_ptr + (bi * stride_do_b + ti * stride_do_t + h * stride_do_h)[:, None]
                     + offs_p[None, :] * stride_do_p, mask=mask, other=0.0).to(ACC)
        if HAS_Z:
            zv = tl.load(z_ptr + (bi * stride_z_b + ti * stride_z_t + h * stride_z_h)[:, None]
                         + offs_p[None, :] * stride_z_p, mask=mask, other=0.0).to(ACC)
            dy = dy * zv * tl.sigmoid(zv)
        xv = tl.load(x_ptr + (bi * stride_x_b + ti * stride_x_t + h * stride_x_h)[:, None]
                     + offs_p[None, :] * stride_x_p, mask=mask, other=0.0).to(ACC)
        acc += dy * xv
    tl.store(part_ptr + (blk.to(tl.int64) * nheads + h) * BLOCK_P + offs_p, tl.sum(acc, axis=0))


_DD_ROWS = 512


def dD_sums(dims: SSDDims, dout, z, x) -> torch.Tensor:
    """sum over (batch, token) of dy * x, (nheads, headdim) in the accumulation dtype (fp32; float64 for float64
    inputs): partial sums per block of rows, then summed in a fixed order (deterministic)."""
    n_tokens = dims.batch * dims.seqlen
    h, p = dims.nheads, dims.headdim
    block_p = max(16, _runtime.next_power_of_2(p))
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    n_blk = max(_runtime.cdiv(n_tokens, _DD_ROWS), 1)
    part = _runtime.buffer((n_blk, h, block_p), acc, x.device)
    z_arg = z if z is not None else x
    with _runtime.on_device(x.device):
        _runtime.launch(_dD_kernel, (n_blk, h), (
            dout, z_arg, x, part, n_tokens, dims.seqlen, h, p, *dout.stride(), *z_arg.stride(), *x.stride()), x.device,
            ROWS=_DD_ROWS, BLOCK_T=64 if block_p <= 64 else 32, BLOCK_P=block_p, HAS_Z=z is not None,
            F64=acc == torch.float64, num_warps=4)
    return part.sum(0)[:, :p]


@triton.jit
def _raw_dt(dt_ptr, dt_bias_ptr, n, seqlen, nheads, stride_b, stride_t, stride_h, BLOCK: tl.constexpr,
            HAS_DT_BIAS: tl.constexpr):
    """This program's block of (batch, token, head) positions, flattened: offsets, mask, raw dt and bias (fp32)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    i_h = offs % nheads
    bt = offs // nheads
    raw = tl.load(dt_ptr + (bt // seqlen) * stride_b + (bt % seqlen) * stride_t + i_h * stride_h, mask=mask,
                  other=0.0).to(tl.float32)
    bias = tl.zeros_like(raw)  # (a tensor either way: both Tritons return it alike)
    if HAS_DT_BIAS:
        bias = tl.load(dt_bias_ptr + i_h, mask=mask, other=0.0).to(tl.float32)
    return offs, mask, raw, bias


@triton.jit
def _dt_prep_kernel(out_ptr, dt_ptr, dt_bias_ptr, n, seqlen, nheads, stride_b, stride_t, stride_h, dt_lo, dt_hi,
                    BLOCK: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr):
    """dt after bias, softplus and clamp, fp32 (batch, seqlen, nheads) contiguous."""
    offs, mask, raw, bias = _raw_dt(dt_ptr, dt_bias_ptr, n, seqlen, nheads, stride_b, stride_t, stride_h, BLOCK,
                                    HAS_DT_BIAS)
    tl.store(out_ptr + offs, process_dt(raw, bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), mask=mask)


@triton.jit
def _dt_grad_kernel(ddt_ptr, dt_ptr, dt_bias_ptr, n, seqlen, nheads, stride_b, stride_t, stride_h, dt_lo, dt_hi,
                    BLOCK: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr):
    """In place: the gradient with respect to the processed dt (fp32, contiguous) becomes that with
    respect to the raw dt."""
    offs, mask, raw, bias = _raw_dt(dt_ptr, dt_bias_ptr, n, seqlen, nheads, stride_b, stride_t, stride_h, BLOCK,
                                    HAS_DT_BIAS)
    ddt = tl.load(ddt_ptr + offs, mask=mask, other=0.0)
    tl.store(ddt_ptr + offs, process_dt_grad(ddt, raw, bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), mask=mask)


_DT_BLOCK = 1024


def _dt_elementwise(kernel, buf, dims: SSDDims, dt, dt_bias, dt_softplus):
    """Launch one of the two kernels above over every (batch, token, head) of buf."""
    n = buf.numel()
    if n:
        with _runtime.on_device(dt.device):
            _runtime.launch(kernel, (_runtime.cdiv(n, _DT_BLOCK),), (
                buf, dt, dt_bias if dt_bias is not None else dt, n, dims.seqlen, dims.nheads, *dt.stride(),
                float(dims.dt_limit[0]), float(dims.dt_limit[1])), dt.device,
                BLOCK=_DT_BLOCK, HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus, num_warps=4)


def processed_dt(dims: SSDDims, dt, dt_bias, dt_softplus) -> torch.Tensor:
    """dt after dt_bias, softplus and dt_limit, fp32 (batch, seqlen, nheads) contiguous: one small
    launch, so that the backward's sweeps (three per chunk) do not each repeat softplus and the clamp."""
    out = _runtime.buffer((dims.batch, dims.seqlen, dims.nheads), torch.float32, dt.device)
    _dt_elementwise(_dt_prep_kernel, out, dims, dt, dt_bias, dt_softplus)
    return out


def raw_dt_grad_(ddt: torch.Tensor, dims: SSDDims, dt, dt_bias, dt_softplus) -> torch.Tensor:
    """ddt (fp32, contiguous, with respect to the processed dt) turned in place into the gradient with
    respect to the raw dt: zero outside the clamp, then through softplus."""
    _dt_elementwise(_dt_grad_kernel, ddt, dims, dt, dt_bias, dt_softplus)
    return ddt


def _config(dims: SSDDims, mode: int, device: torch.device):
    """(BLOCK_N, BLOCK_P, SUB, num_warps, early publish) from the shape: no autotuning at call time.

    Two [N, P] fp32 states live in registers, so the sub-chunk tiles stay small: on an H100 at the
    2.7B shape (benchmarks/notes/ssd_backward.md) in the TF32 mode SUB 16 with 4 warps beat SUB 32/64
    and 8 warps (255 registers either way; SUB 64 spills 600); the SPLIT mode's 16-bit operands take
    SUB 32 there (8x4K 7.93 -> 7.35 ms). Few chains (one long sequence) publish early.
    """
    block_n = _block_n(dims.dstate)
    block_p = states_block_p(dims.headdim)  # (the sweeps read the entering states in their layout)
    sub = max(16, min(32, dims.chunk_size, 32768 // (block_n * block_p)))
    if mode == SPLIT and block_n * block_p <= 8192:
        sub = min(32, dims.chunk_size)
    num_warps = 4 if block_n * block_p <= 8192 else 8
    return block_n, block_p, sub, num_warps, not many_chains(dims, device)


def ssd_backward(dims: SSDDims, dout, dfinal, x, dt, A, B, C, *, D=None, z=None, ypre=None, dt_bias=None,
                 dt_softplus=False, initial_states=None, state_dtype=None, early_publish=None, needs=None, mode=None,
                 sub=None, num_warps=None, split_mask=None, num_stages=None, dstates=None, dd_in_kernel=None,
                 dstates_warps=None, dstates_sub=None, tiles=None, tile=None, tiles_warps=None, tiles_stages=None,
                 bc_heads=None, bc_warps=None, tiles_maxnreg=None, bc_maxnreg=None, dstates_span=None, paths=None,
                 paths_heads=None, paths_warps=None, paths_maxnreg=None, paths_stages=None, paths_tile=None,
                 bc_stages=None, states=None, deterministic=False, chunk=None, in_place=None, k_halves=None,
                 cols_from_bracket=None, halves=None):
    """Gradients of ssd_scan on validated inputs: [dx, ddt, dA, dB, dC, dD, dz, ddt_bias, dinitial_states],
    None for an absent input or one whose flag in `needs` (same order) is False. `ypre` is y before
    the z gate (needed with z); dfinal is the gradient of final_states, or None for zero.
    mode (16-bit inputs; for tuning): how the products of computed values treat them, ROUND, SPLIT or
    TF32 (default DEFAULT_MODE). ROUND is the fastest and has about 10x the error in dA and dt_bias.
    split_mask (SPLIT; for tuning): the products that split, SPLIT_ALL's bits (default DEFAULT_SPLIT_MASK).
    num_stages (for tuning): the gradient kernel's software pipelining of its loads (default STAGES).
    dstates, dd_in_kernel, dstates_warps, dstates_sub (for tuning): whether the gradient chain runs as a launch
    of its own (default `chain_launch`), whether dD is summed in the gradient kernel (default DD_IN_KERNEL), that
    launch's warps and sub-chunk (DSTATES_WARPS, DSTATES_SUB); dstates_span (for tuning): its form, 0 for a program a
    chunk handing over early, G >= 1 for spans of G chunks handed over late (default `chain_span`).
    tiles (default TILES): the gradients by ops/ssd/backward_tiles.py's launches instead of the sweeps (always after
    the chain launch); tile, tiles_warps, tiles_stages, tiles_maxnreg, bc_heads, bc_warps, bc_maxnreg (for tuning):
    its tokens a block, its warps, stages and register cap, the heads a program of its pair launch sums (default: all
    of the group's where that leaves about four programs an SM), that launch's warps, register cap and stages
    (bc_stages); paths, paths_heads, paths_warps, paths_maxnreg, paths_stages, paths_tile (for tuning): whether the
    block's state paths run as a launch of their own (default backward_tiles.paths_launch), the heads a program of it
    sums, its warps, register cap, pipeline stages and tokens a block.
    With the tiles (the default where use_tiles says so): the states, the gradient chain, cs, the S^T tiles, the tiles,
    their state paths (where paths_launch says so), their pairs and the decay gradient's sums (seven or eight
    launches).
    With the sweeps: two launches (states, gradients), a third for the gradient chain with few chains or z, a small
    one for dD with D where there is no third. Either way two small elementwise ones with dt_bias, softplus or
    dt_limit (dt processed ahead, its gradient taken back after), and a few small sums (dB/dC casts, per-head
    shares). `states`: the state entering every chunk, stored by the forward (`forward_states`), in place of the
    recompute launch (the sweeps; the tiles where its layout and dtype are theirs and they run not in place).
    `deterministic`: the tiles without float atomics (`deterministic_tiles` says where they run), the same launches
    with each sum in a slot of its own, summed in a fixed order. `chunk`: the chunk size the backward runs in
    (default: `tiles_chunk`'s with the atomic tiles, and in the deterministic mode with the states in place; else the
    forward's). `in_place` (default: in the deterministic mode, IN_PLACE_STATES, unless the forward stored the states;
    only where the tiles have their paths launch): the states are recomputed after the launches that read the state
    gradients, into their buffer (one buffer of chunk states instead of two). k_halves (for tuning): the tiles
    kernel's pair products in two halves of their tokens (default TILES_K_HALVES). cols_from_bracket (for tuning): the
    decay gradient's column sums from the tiles kernel's bracket . x rather than the pair launch (default
    backward_tiles.COLS_FROM_BRACKET). halves (for tuning): with the tiles and few chains (early publish, not
    varlen), the state recompute and the chain launch sweep two chunks a program, storing the states and their
    gradients at both (default: each where `early_halves` says so; True or False: both)."""
    device = x.device
    inputs = (x, dt, A, B, C, D, z, dt_bias, initial_states)
    needs = [True] * 9 if needs is None else list(needs)
    need = {name: n and t is not None for name, n, t in
            zip(("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "init"), needs, inputs)}
    if deterministic:
        tiles = True
    if tiles is None:
        tiles = TILES and use_tiles(dims, device, x.dtype)
    if x.dtype == torch.float64:  # (gradcheck under the interpreter) fp32 products
        mode = TF32
    elif x.dtype == torch.float32:
        mode = ROUND
    elif mode is None:
        mode = TILES_MODE if tiles else DEFAULT_MODE
    narrow = tiles and narrow_states(x.dtype, mode)
    scaled = tiles and scaled_states(x.dtype, mode)  # (fp16: the states and dH over a unit a tile)
    states_dtype = tiles_states_dtype(x.dtype, state_dtype, mode) if tiles else (state_dtype or torch.float32)
    dH_dtype = x.dtype if narrow else torch.float32  # (the chain launch's buffer)
    if tiles and paths is None:  # (whether the tiles' state paths run as a launch of their own, decided once here)
        from flashssm.ops.ssd.backward_tiles import paths_launch

        paths = paths_launch(*states_shape(dims)[2:])
    # one buffer for the states and their gradients (the chain's dH first, the states recomputed over it later), where
    # the tiles have their paths launch and both are stored alike
    if in_place is None:  # (not where the forward stored the states: `forward_states`)
        in_place = deterministic and IN_PLACE_STATES and states is None
    if in_place and tiles:
        in_place = bool(states_dtype == dH_dtype and paths)
    else:
        in_place = False
    # (the deterministic mode takes the smaller chunks with one buffer only: with two its peak is above mamba_ssm's)
    if tiles and chunk is None and (in_place or not deterministic):
        chunk = tiles_chunk(dims, device, x.dtype, states_dtype)
    if chunk is not None and chunk != dims.chunk_size:  # (the result depends on the chunking by rounding only)
        dims = dataclasses.replace(dims, chunk_size=chunk)
    halves_states, halves_chain = (early_halves(dims, device, z is not None or need["D"], halves) if tiles
                                   else (False, False))
    block_n, block_p, sub_, num_warps_, early = _config(dims, mode, device)
    sub, num_warps = sub or sub_, num_warps or num_warps_
    if early_publish is not None:
        early = early_publish
    varlen = varlen_table(dims, device) if dims.cu_seqlens is not None else None
    # dt after bias, softplus and clamp, once: the launches below then read it as a plain dt (at the
    # 2.7B shape, 8x4K, softplus in the gradient kernel's three sweeps cost ~0.9 ms; notes/ssd_backward.md)
    raw_dims, raw_dt, raw_bias, raw_softplus = dims, dt, dt_bias, dt_softplus
    # (always with the tiles: their launches read dt as processed and clamp nothing, and the default dt_limit's clamp
    # at 0 does change a negative dt; dx was ~1e3 off for one before. The sweeps clamp it themselves.)
    prepared = tiles or dt_bias is not None or dt_softplus or dims.dt_limit != (0.0, math.inf)
    if prepared:
        dt, dt_bias, dt_softplus = processed_dt(dims, dt, dt_bias, dt_softplus), None, False
        dims = dataclasses.replace(dims, dt_limit=(-math.inf, math.inf))
    if tiles and states is not None and (in_place or not states_fit(states, states_shape(dims), states_dtype,
                                                                     scaled)):
        states = None  # (stored by the forward for a backward in sweeps, or for the tiles' other chunks or mode)
    # (the chain launch's dH buffer, which the recompute in place stores over; scaled: the flat buffer with its units,
    # `forward.new_states`, of which dH_buf is the tiles' view)
    dH_store = None

    def recompute(carry=None, out=None):
        return entering_states(dims, x, dt, A, B, dt_bias=dt_bias, dt_softplus=dt_softplus,
                               initial_states=initial_states, state_dtype=state_dtype, varlen=varlen,
                               store_dtype=states_dtype, out=dH_store if out is not None else None,
                               carry=carry, late_states=False if halves_states else None, halves=halves_states,
                               scaled=scaled)

    if states is None and not in_place:
        states = recompute()
    n_rows = states_shape(dims)[0]
    table, _, n_lanes = varlen if varlen is not None else (x, n_rows, dims.batch)
    h, p, n, g = dims.nheads, dims.headdim, dims.dstate, dims.ngroups
    r = h // g
    n_programs = n_rows * h
    counter, flags, slots = workspace(device).get(n_lanes * h, block_p * block_n, torch.float32)
    dx = _runtime.empty(x.shape, x.dtype, device) if need["x"] else None
    dz = _runtime.empty(x.shape, x.dtype, device) if need["z"] else None
    want_ddt = need["dt"] or (prepared and need["dt_bias"])  # (prepared: dt_bias's gradient sums ddt)
    # (the tiles sum dt_bias's gradient in their decay gradient's launch, which stores ddt only where it is wanted)
    ddt = (_runtime.empty((dims.batch, dims.seqlen, h), torch.float32, device)
           if (need["dt"] if tiles else want_ddt) else None)
    bc_shape = (dims.batch, dims.seqlen, g, n)

    def bc_buffer():  # (deterministic: the tiles' slots are summed into it; else atomics add to it)
        return (_runtime.empty(bc_shape, torch.float32, device) if deterministic
                else torch.zeros(bc_shape, dtype=torch.float32, device=device))

    dB_buf = bc_buffer() if need["B"] else None
    dC_buf = bc_buffer() if need["C"] else None
    dinit = _runtime.empty((dims.num_seqs, h, p, n), torch.float32, device) if need["init"] else None
    D_arg, stride_D = d_operand(D, A)
    z_arg = z if z is not None else x
    yp = ypre if ypre is not None else x
    init_arg, init_strides = init_operand(initial_states, x)
    df_arg = dfinal if dfinal is not None else x
    df_strides = dfinal.stride() if dfinal is not None else (0, 0, 0, 0)
    bc_any = dB_buf if dB_buf is not None else dC_buf
    bc_strides = bc_any.stride()[:3] if bc_any is not None else (0, 0, 0)
    if tiles:  # the tiles need dH of every chunk from the chain launch
        dstates, dd_in_kernel = True, False
    if dstates is None:
        dstates = chain_launch(early, z is not None)
    dd_in_kernel = DD_IN_KERNEL if dd_in_kernel is None else dd_in_kernel
    dH_buf = dy_buf = None
    fused_dd = False
    # the decay gradient's carry <dH, H> per (chunk, head) from the chain launch, where the states are in memory before
    # it (from the forward, or recomputed first) and the paths launch would read dH again for it (not with initial
    # states: the paths take chunk 0's state exactly from them)
    chain_carry = bool(tiles and states is not None and (need["A"] or want_ddt) and initial_states is None and paths
                       and CHAIN_CARRY)
    carry = _runtime.empty((n_rows, h), torch.float32, device) if chain_carry else None  # (every row written)
    global last_compiled
    with _runtime.on_device(device):
        if dstates:
            # the gradient chain as a launch of its own: dH after every chunk, dz, and with z the gated dy, which
            # the gradient kernel then reads in place of dout and z
            dH_shape = (n_rows, h, block_n, block_p)
            dH_store = new_states(dH_shape, dH_dtype, device, scaled)
            dH_buf = dH_store[:math.prod(dH_shape)].view(dH_shape) if scaled else dH_store
            dH_units = states_units(dH_store, block_n * block_p) if scaled else None
            s_units = states_units(states, block_n * block_p) if scaled and states is not None else None
            dy_buf = _runtime.empty(x.shape, x.dtype, device) if z is not None else None
            fused_dd = need["D"] and not dd_in_kernel and x.dtype != torch.float64  # (float64: _dD_kernel's sums)
            span = chain_span(dims, device) if dstates_span is None else dstates_span
            late = span > 0 and not halves_chain
            chain_q = dims.chunk_size * (span if late else 2 if halves_chain else 1)
            chain_rows = _chunk_rows(dims, chain_q) if late or halves_chain else n_rows
            chain_table, state_rows = table, x
            if late and dims.cu_seqlens is not None:  # packed: the table of spans, and the rows of their chunks
                chain_table = varlen_table(dims, device, chain_q)[0]
                state_rows = varlen_state_rows(dims, chain_q, dims.chunk_size, device)
            # D a value a head: the launch sums each token's row (no [SUB, headdim] accumulator), steps wide
            dd_rows = fused_dd and D.dim() == 1 and CHAIN_DD_ROWS
            if fused_dd:
                dd_part = _runtime.buffer((chain_rows, h, 1 if dd_rows else block_p), torch.float32, device)
            _runtime.launch(_dstates_kernel, (chain_rows * h,), (
                dt, A, C, z_arg, dt_bias if dt_bias is not None else A, dout, yp, df_arg,
                _or(dy_buf, x), _or(dz, x), dH_buf, _or(dinit, dH_buf), counter, flags, slots, chain_table, x,
                dd_part if fused_dd else dH_buf, _or(states, dH_buf), _or(carry, dH_buf), state_rows,
                _or(dH_units, dH_buf), _or(s_units, dH_buf),
                dims.batch, dims.seqlen, h, p, n, r, chain_rows, chain_rows * h,
                *dt.stride(), *C.stride(), *z_arg.stride(), *dout.stride(), *yp.stride(), *df_strides, *x.stride(),
                float(dims.dt_limit[0]), float(dims.dt_limit[1])), x.device,
                CHUNK=chain_q,
                SUB=dstates_sub or chain_sub(z is not None or (fused_dd and not dd_rows), dims.chunk_size, block_n,
                                             block_p),
                BLOCK_P=block_p,
                BLOCK_N=block_n, HAS_Z=z is not None,
                HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus, HAS_DFINAL=dfinal is not None,
                IS_VARLEN=dims.cu_seqlens is not None, NEED_DZ=dz is not None, NEED_DINIT=dinit is not None,
                DOT_PRECISION=_dot_precision(x.dtype), MODE=mode, STORE_DY=dy_buf is not None, ROUND_DY=True,
                NEED_DD=fused_dd, LATE=late, STATE_CHUNK=dims.chunk_size, HALVES=halves_chain, CARRY=chain_carry,
                SCALED=scaled, DD_ROWS=dd_rows, num_warps=dstates_warps or DSTATES_WARPS, num_stages=DSTATES_STAGES)
        g_dout, g_z = (dy_buf, None) if dy_buf is not None else (dout, z)
        if tiles:
            dA_part = _tiles_launch(dims, x, dt, A, B, C, D, initial_states, (D_arg, stride_D, init_arg, init_strides),
                                    g_dout, states, dH_buf, dx, ddt, dB_buf, dC_buf, bc_strides, table, need["A"], mode,
                                    split_mask, tile, tiles_warps, tiles_stages, bc_heads, bc_warps, tiles_maxnreg,
                                    bc_maxnreg, paths, paths_heads, paths_warps, paths_maxnreg, paths_stages,
                                    paths_tile, bc_stages, deterministic,
                                    recompute=recompute if in_place else None, k_halves=k_halves,
                                    cols_from_bracket=cols_from_bracket, carry=carry,
                                    units=(s_units, dH_units) if scaled else None,
                                    raw=(raw_dt, raw_bias, raw_softplus, *raw_dims.dt_limit),
                                    bias_sum=need["dt_bias"])
        else:
            # the sweeps' per-token row terms and per-program shares of dD, dA and d dt_bias
            rowterm = _runtime.buffer((n_rows, h, dims.chunk_size), torch.float32, device)
            part = _runtime.buffer((n_rows, h, block_p + 2), torch.float32, device)
            g_z_arg = g_z if g_z is not None else x
            last_compiled = _runtime.launch(_ssd_bwd_kernel, (n_programs,), (
                x, dt, A, B, C, D_arg, g_z_arg, dt_bias if dt_bias is not None else A, init_arg, g_dout, yp, df_arg,
                states, _or(dH_buf, states), _or(dx, part), _or(ddt, part), _or(dB_buf, part), _or(dC_buf, part),
                _or(dz, part), _or(dinit, part), rowterm, part, counter, flags, slots, table,
                dims.batch, dims.seqlen, h, p, n, r, n_rows, n_programs,
                *x.stride(), *dt.stride(), *B.stride(), *C.stride(), *g_z_arg.stride(), *g_dout.stride(), *yp.stride(),
                *bc_strides, *stride_D, *init_strides, *df_strides,
                float(dims.dt_limit[0]), float(dims.dt_limit[1])), x.device,
                CHUNK=dims.chunk_size, SUB=sub, BLOCK_P=block_p, BLOCK_N=block_n,
                HAS_D=D is not None, HAS_Z=g_z is not None, HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus,
                HAS_INIT=initial_states is not None, HAS_DFINAL=dfinal is not None,
                IS_VARLEN=dims.cu_seqlens is not None, EARLY_PUBLISH=early and not dstates,
                DOT_PRECISION=_dot_precision(x.dtype), MODE=mode,
                SPLIT_MASK=DEFAULT_SPLIT_MASK if split_mask is None else split_mask,
                NEED_DX=dx is not None, NEED_DDT=ddt is not None,
                NEED_DB=dB_buf is not None, NEED_DC=dC_buf is not None, NEED_DZ=dz is not None and not dstates,
                NEED_DINIT=dinit is not None, DH_GIVEN=dstates, DD_IN_KERNEL=dd_in_kernel,
                num_warps=num_warps, num_stages=num_stages or STAGES,
            )
        del dH_buf, dy_buf  # (freed before the sums and casts below allocate)
        dH_store = None
    dB = dB_buf.to(B.dtype) if dB_buf is not None else None
    dC = dC_buf.to(C.dtype) if dC_buf is not None else None
    # (nheads, BLOCK_P + 2), or with the tiles (planes, nheads): dA's and dt_bias's; programs summed in a fixed order
    sums = (dA_part.sum(1) if dA_part is not None else None) if tiles else part.sum(0)
    dA = None
    if need["A"]:
        dA = (sums[0] if tiles else sums[:, block_p]).to(A.dtype, copy=True)
    ddt_bias = None
    if tiles:  # (the decay gradient's launch took ddt on to the raw dt, and summed dt_bias's)
        if need["dt_bias"]:
            ddt_bias = sums[1].to(raw_bias.dtype, copy=True)
        dt = raw_dt
    elif prepared:
        if ddt is not None:
            raw_dt_grad_(ddt, raw_dims, raw_dt, raw_bias, raw_softplus)
        if need["dt_bias"]:
            ddt_bias = ddt.sum((0, 1)).to(raw_bias.dtype)
        if not need["dt"]:
            ddt = None
        dt = raw_dt
    elif need["dt_bias"]:
        ddt_bias = sums[:, block_p + 1].to(dt_bias.dtype, copy=True)
    dD = None
    if need["D"]:  # (nheads, headdim): the gradient kernel's shares, the chain launch's, or _dD_kernel's
        dD = sums[:, :p] if dd_in_kernel else dd_part.sum(0)[:, :p] if fused_dd else dD_sums(dims, dout, z, x)
        dD = (dD if D.dim() == 2 else dD.sum(1)).to(D.dtype, copy=True)
    if dinit is not None:
        dinit = dinit.to(initial_states.dtype)
    if ddt is not None:
        ddt = ddt.to(dt.dtype)
    return [dx, ddt, dA, dB, dC, dD, dz, ddt_bias, dinit]


last_compiled = None  # the gradient kernel of the last call: n_regs, n_spills (for tuning)

# The gradient launch in tiles (ops/ssd/backward_tiles.py) instead of the sweeps, after the chain launch. On an H100
# (2.7B shape, bf16, backward alone; benchmarks/notes/ssd_backward.md, twelfth session): 1x32K 5.46 -> 5.08 ms
# without options, 5.70 -> 5.34 with D, dt_bias, softplus, 6.26 -> 5.88 with z too; 8x4K 4.99 -> 5.05, 5.51 -> 5.32,
# 6.28 -> 5.90. Its products with a computed operand round (TILES_MODE): its decay gradient has no running-state terms
# that cancel, and at 1x2K with D its dA error was 1.7e-4 against the sweeps' 1.6e-4 (SPLIT: 1.2e-4, 5 % slower).
TILES = True
TILES_MODE = ROUND
# The decay gradient's carry <dH, H> from the chain launch as it stores dH, where the states are in memory before it,
# instead of the paths launch reading dH again (notes/ssd_backward.md, thirty-fifth session). False: the paths' (A/B).
CHAIN_CARRY = True


def forward_states(dims: SSDDims, x: torch.Tensor, B: torch.Tensor, C: torch.Tensor, z: torch.Tensor | None,
                   state_dtype: torch.dtype | None, cfg) -> tuple[torch.Tensor, int | None] | None:
    """(a buffer, its chunk) for the forward launch of `cfg` to store the state entering every chunk in, for this
    backward (`forward.launch(states=, state_chunk=)`), or None where the backward recomputes them. In the
    deterministic mode only where its tiles run in the forward's chunks (elsewhere they recompute the states into their
    gradients' buffer, one buffer for both).
    - A backward in sweeps (few chunks: the call is host-bound, and this saves the recompute launch and its host
      work): the forward's chunks, stored before each chunk's sweep (chunk None), up to STATES_FROM_FORWARD_BYTES
      (at 1x2K of the 2.7B shape 21 MB of fp32 states a layer; at most 8 x SMs (chunk, head) states, 34 MB on an H100
      at that shape, since the tiles take over above that).
    - The tiles (`tiles_states`): the tiles' chunks, stored as the output sweep runs.
    The cost is memory held from the forward to the backward; a call's peak is unchanged (the recompute allocated the
    same buffer in the backward)."""
    from flashssm.ops.ssd import backward

    if not STATES_FROM_FORWARD or backward.DEFAULT_FORM != "chain" or x.dtype == torch.float64:
        return None
    if torch.are_deterministic_algorithms_enabled():
        # the deterministic tiles recompute their states into their gradients' buffer (one buffer for both), where
        # they run in smaller chunks than the forward's (two buffers there pass mamba_ssm's peak); in the forward's
        # chunks they take two buffers anyway (1x32K of the 2.7B shape: 1266 MiB against mamba_ssm's 1386)
        kept = tiles_states_dtype(x.dtype, state_dtype, TILES_MODE)
        if backward.deterministic_tiles(dims, x) and tiles_chunk(dims, x.device, x.dtype, kept) == dims.chunk_size:
            return tiles_states(dims, x, B, C, z, state_dtype, cfg)
        return None
    if TILES and use_tiles(dims, x.device, x.dtype):
        return tiles_states(dims, x, B, C, z, state_dtype, cfg)
    if not stores_states(dims, cfg):
        return None
    shape = states_shape(dims)
    dtype = state_dtype or torch.float32
    if math.prod(shape) * dtype.itemsize > STATES_FROM_FORWARD_BYTES:
        return None
    return _runtime.buffer(shape, dtype, x.device), None


def tiles_states(dims: SSDDims, x: torch.Tensor, B: torch.Tensor, C: torch.Tensor, z: torch.Tensor | None,
                 state_dtype: torch.dtype | None, cfg) -> tuple[torch.Tensor, int] | None:
    """The buffer of `forward_states` for the tiles backward (the atomic mode), with the tiles' chunk (`tiles_chunk`),
    in the dtype and layout the tiles read (the input dtype with 16-bit inputs: TILES_MODE rounds them to it anyway;
    fp16's scaled, `scaled_states`).
    The forward's output sweep holds the state entering each of those chunks, so storing it costs the forward a write
    of the states and spares the backward the recompute launch, which reads x, B and dt again (benchmarks/notes/
    ssd_backward.md, thirty-fourth session). Only where it holds no more memory than mamba_ssm's autograd does: that
    saves the output y (an x-sized tensor) for its backward, which flashssm's does not, unless z gates it (both then
    keep y before the gate); so without z and with the states no larger than x (dstate <= the tiles' chunk: 2.7B
    shape, 8x4K in chunks of 128, as many bytes as x). Where the forward launch can write the layout
    (`forward.sweep_states`)."""
    if not TILES_STATES_FROM_FORWARD or z is not None:
        return None
    dtype = tiles_states_dtype(x.dtype, state_dtype, TILES_MODE)
    chunk = tiles_chunk(dims, x.device, x.dtype, dtype)
    shape = states_shape(dataclasses.replace(dims, chunk_size=chunk))
    if math.prod(shape) * dtype.itemsize > x.numel() * x.element_size() * (1 + STATES_OVER_X):
        return None
    if not sweep_states(dims, cfg, x, B, C, z, chunk):
        return None
    scaled = scaled_states(x.dtype, TILES_MODE)
    return new_states(shape, dtype, x.device, scaled, poison=True), chunk  # (NaN-filled when the tests poison outputs)


# The forward stores the entering states for a backward in sweeps, up to this size, and for the tiles where
# `tiles_states` says so. False: always recomputed (A/B). FLASHSSM_STORE_STATES=0 turns the tiles' off: a model then
# keeps nothing between a layer's forward and backward beyond its inputs (at 8x4K of the 2.7B shape the states are
# as large as x), for ~7-10 % of a training call's time.
STATES_FROM_FORWARD = True
STATES_FROM_FORWARD_BYTES = 64 << 20
# How far past x's bytes the tiles' stored states may go (A/B; with PACKED_ROWS_OVER above 0, packed sequences' states
# in chunks of 128 pass x's bytes by up to a chunk row a sequence).
STATES_OVER_X = 0.0
TILES_STATES_FROM_FORWARD = os.environ.get("FLASHSSM_STORE_STATES", "1") != "0"


def use_tiles(dims: SSDDims, device: torch.device, dtype: torch.dtype | None = None) -> bool:
    """The tiles where their launches have enough (chunk, head) programs to fill the GPU several times over: at 1x2K
    (640 of them) they took the sweeps' GPU time but their two extra launches cost more host time than that (backward
    alone 0.46 -> 0.49 ms, with D 0.89 -> 1.02). And wherever the sweeps' kernel would not fit in shared memory: for
    inputs of `dtype` fp32 (or wider) with state tiles past 16K elements (dstate 129-256 with headdim 65-128) it needs
    256 KB, past Hopper's 227 KB (Triton's OutOfResources at launch: fuzz case 1288345749 at model shapes, fifty-ninth
    session; `benchmarks/launch_smem.py`); the tiles' launches take at most 164 KB there."""
    if dtype is not None and wide_fp32_tiles(_block_n(dims.dstate), states_block_p(dims.headdim), dtype.itemsize):
        return True
    return chunk_rows(dims) * dims.nheads >= TILES_MIN_WAVES * _runtime.sm_count(device, on_cpu=0)


def wide_fp32_tiles(block_n: int, block_p: int, element_size: int) -> bool:
    """Whether [block_n, block_p] state tiles of inputs with this element size are fp32 (or wider) past 16K elements
    (dstate 129-256 with headdim 65-128): a kernel holding two of them whole passes Hopper's 227 KB of shared memory
    (the parallel form's dx launch 288 KB, the sweeps 256 KB; fifty-ninth session). `use_tiles` and the dx launch's
    row blocks (`backward._dx_split`) read it."""
    return element_size >= 4 and block_n * block_p > 16384


# `use_tiles`: the (chunk, head) programs a launch of the tiles needs, in programs an SM (A/B)
TILES_MIN_WAVES = 8


def tiles_chunk(dims: SSDDims, device: torch.device, dtype: torch.dtype, states_dtype: torch.dtype) -> int:
    """The chunk size the tiles run in: TILES_CHUNK where the forward's is larger and the gradient chain (like the state
    recompute) runs in spans (`chain_span`: many chains; packed sequences where that adds no chunk rows,
    PACKED_ROWS_OVER), else the forward's. Smaller chunks mean fewer
    tile pairs a token (3 a 128-token chunk against 10 a 256-token one, at 64-token tiles), for twice the stored states
    and state gradients (at the 2.7B shape as many bytes as mamba_ssm's fp32 chunk states take). With few chains the
    recompute and the chain hand over once a chunk, and twice the hand-overs cost more than the pairs save. Not where
    the states (in `states_dtype`, the inputs' `dtype`) would take more bytes than x at TILES_CHUNK (dstate past it, or
    fp32 states of 16-bit inputs): fp16's fp32 states and state gradients took the 2.7B shape's 8x4K training call to
    2024 MiB at its peak, mamba_ssm's being 1403 (the forward's chunks: 1392; fifty-seventh session; fp16's are scaled
    16-bit ones now, `scaled_states`)."""
    if not TILES_CHUNK or dims.chunk_size <= TILES_CHUNK or not chain_span(dims, device):
        return dims.chunk_size
    if _block_n(dims.dstate) * states_dtype.itemsize > TILES_CHUNK * dtype.itemsize:
        return dims.chunk_size
    if (dims.cu_seqlens is not None
            and _chunk_rows(dims, TILES_CHUNK) > _runtime.cdiv(dims.seqlen, TILES_CHUNK) * (1 + PACKED_ROWS_OVER)):
        return dims.chunk_size
    return TILES_CHUNK


# H100, 2.7B shape, bf16, backward alone (benchmarks/notes/ssd_backward.md, twenty-fourth session): chunks of 128 in
# place of the forward's 256, 8x4K 3.32 -> 3.06 ms (pair launch 1.007 -> 0.627, tiles 0.876 -> 0.790, paths 0.742 ->
# 0.854, chain and recompute +0.05 each), 32x2K 6.37 -> 5.94; 64 was slower (3.467: the paths 1.233); at 1x32K (few
# chains, a hand-over a chunk) 128 lost, 3.650 -> 4.128. Training call's peak at 8x4K 1072 -> 1384 MiB (mamba_ssm's
# 1403); in the deterministic mode 1266 -> 1542, above mamba_ssm's, so that mode takes 128 only with its states in
# place (IN_PLACE_STATES: one buffer for H and dH). 0: the forward's chunk always (A/B).
TILES_CHUNK = 128
# Packed sequences take TILES_CHUNK where the chain runs in spans and their chunk rows at TILES_CHUNK are at most this
# fraction more than their tokens' dense count: sequences ending inside chunks add rows to the states and state
# gradients, and at the 2.7B shape the dense 8x4K call's peak is already at mamba_ssm's (1384 MiB against 1386-1404),
# so any extra row passes it (one H200, thirty-ninth session, training call, ragged packings: 8 sequences 3.160 ms at
# the forward's 256 against 2.886 at 128 with the states stored, peak 1087 against 1398 MiB; 64 sequences 3.348
# against 3.106, 1170 against 1465). A/B: math.inf, always; -1, never.
PACKED_ROWS_OVER = 0.0


def early_halves(dims: SSDDims, device: torch.device, narrow_chain: bool,
                 force: bool | None = None) -> tuple[bool, bool]:
    """Whether the state recompute and the chain launch, where they publish early (few chains, not packed), sweep two
    chunks a program and store at both (`halves`): half the programs and hand-overs. The recompute where a sequence
    has at least HALVES_STATES_CHUNKS chunks (the hand-overs' serial chain is long; the two own states cost registers:
    168 -> 255, three programs an SM -> two); the chain launch without z or D's share (`narrow_chain`: there its two
    shares spilled and it was slower). force (tuning): True or False for both, where they publish early."""
    if dims.cu_seqlens is not None or many_chains(dims, device):
        return False, False
    if force is not None:
        return bool(force), bool(force)
    if not EARLY_HALVES:
        return False, False
    return _runtime.cdiv(dims.seqlen, dims.chunk_size) >= HALVES_STATES_CHUNKS, not narrow_chain


# H100, 2.7B shape, bf16, backward alone (benchmarks/notes/ssd_backward.md, twenty-seventh session): the recompute
# 1x32K (128 chunks a sequence) 0.475 -> 0.404 ms, 2x16K (64) 0.381 -> 0.412, 4x8K (32) 0.386 -> 0.442; the chain
# launch without z or D 1x32K 0.446 -> 0.356, 2x16K 0.416 -> 0.355, 4x8K 0.468 -> 0.388, 1x8K 0.120 -> 0.099, with z
# 1.085 -> 1.237 (1x32K). Backward 1x32K 3.281 -> 3.113 ms. False: a program a chunk (A/B).
EARLY_HALVES = True
HALVES_STATES_CHUNKS = 128

# The deterministic mode's tiles (with their paths launch) keep one buffer of chunk states: the chain stores dH in it,
# the launches that read dH run, then the states are recomputed over it (dotted with dH on the way: the decay
# gradient's carry) and the paths' dC side reads them. H100, 2.7B shape, bf16, backward alone (notes/ssd_backward.md,
# twenty-fifth session): the recompute reads dH too (+0.135 ms at 8x4K) and the paths launch no longer does (-0.08);
# 320 MiB less at 8x4K (1064 -> 744 MiB above the inputs). The deterministic mode then takes chunks of 128 as the
# atomic one does (8x4K 3.59 -> 3.24 ms, peak 946 -> 854 MiB); the atomic mode keeps two buffers (2.99 against 3.06 ms
# in one). False: two buffers always (A/B).
IN_PLACE_STATES = True


def heads_per_program(per_group: int, programs: int, per_sm: int, device: torch.device) -> int:
    """Heads of a group that one program sums when a launch has `programs` programs per block of heads: all of them,
    unless that leaves fewer than about `per_sm` programs an SM; then blocks of fewer heads."""
    blocks = min(per_group, max(1, -(-per_sm * _runtime.sm_count(device, on_cpu=132) // programs)))
    return -(-per_group // blocks)


def _tiles_launch(dims: SSDDims, x, dt, A, B, C, D, initial_states, placeholders, dy, states, dH, dx, ddt, dB_buf,
                  dC_buf, bc_strides, table, need_dA, mode, split_mask, tile, warps, stages, bc_heads=None,
                  bc_warps=None, maxnreg=None, bc_maxnreg=None, paths=None, paths_heads=None, paths_warps=None,
                  paths_maxnreg=None, paths_stages=None, paths_tile=None, bc_stages=None, deterministic=False,
                  recompute=None, k_halves=None, cols_from_bracket=None, carry=None, units=None, *, raw,
                  bias_sum=False):
    """dx, ddt (to the raw dt: raw = (dt, dt_bias, dt_softplus, dt_limit's two bounds), where dt is processed), dB
    and dC (added to the fp32 buffers) by backward_tiles' launches; returns the (1 or with bias_sum 2, rows, nheads)
    shares of dA and of dt_bias (the sums of the raw ddt; ddt may be None then), or None where neither the decay
    gradient nor ddt is wanted. recompute (with the paths launch; states None): the states are not in memory
    yet; recompute(carry, dH) stores them over dH (`entering_states`' out and carry) once the launches that read dH
    have run, and the paths launch runs in two, its dB side before, its dC side after. placeholders: D's and
    initial_states' kernel arguments (d_operand, init_operand), bc_strides: the dB/dC buffers' (contiguous).
    deterministic: no float atomics (needs the paths launch): the paths and pair launches store every sum in a slot of
    its own, and the slots are summed in a fixed order (dB and dC into their buffers, which need not be zeroed; the
    pair sums by the dA launch). units: scaled states (fp16, `scaled_states`), the (states', dH's) units (the
    states' None where they are not in memory yet: the recompute stores them over dH, units too)."""
    global last_compiled
    from flashssm.ops.ssd import backward_tiles as bt

    device = x.device
    h, p, n, g = dims.nheads, dims.headdim, dims.dstate, dims.ngroups
    q = dims.chunk_size
    n_rows = dH.shape[0]
    block_n, block_p = dH.shape[2], dH.shape[3]
    t = min(tile or bt.TILE, q)
    n_blk = q // t
    need_da = ddt is not None or need_dA or bias_sum
    need_bc = dB_buf is not None or dC_buf is not None
    # the decay gradient's column sums from bracket . x (the pair launch sums rows only), where the tiles kernel's pair
    # products can take the pairs to ~16 bits or better, as the pair launch's rows do: with 16-bit inputs split (the
    # ROUND and SPLIT modes; TF32's one tf32 pass would round them to 11 bits), with fp32 inputs at torch's 'highest'
    # matmul precision (tf32x3), float64 ones always (fp32 products)
    narrow_in = x.element_size() <= 2
    cols = need_da and (bt.COLS_FROM_BRACKET if cols_from_bracket is None else cols_from_bracket) and (
        mode != TF32 if narrow_in else _dot_precision(x.dtype) != "tf32")
    pair_mode = SPLIT if cols and narrow_in else -1
    plane = n_rows * h * q
    # per (chunk, head) and token, fp32: bracket . x, the suffix-summed terms, the edge terms, cs
    scratch = _runtime.buffer((4, n_rows, h, q), torch.float32, device) if need_da or need_bc else None
    carry_given = carry is not None
    if not carry_given:
        carry = _runtime.buffer((n_rows, h), torch.float32, device) if need_da else None
    D_arg, stride_D, init_arg, init_strides = placeholders
    filler = _or(scratch, dH)
    scaled = units is not None
    s_units, d_units = (_or(units[0], units[1]), units[1]) if scaled else (filler, filler)
    precision = _dot_precision(x.dtype)
    mask = bt.TILES_SPLIT_DEFAULT if split_mask is None else split_mask
    is_varlen = dims.cu_seqlens is not None
    paths = bt.paths_launch(block_n, block_p) if paths is None else paths
    split = recompute is not None
    if split and not paths:
        raise ValueError("_tiles_launch: recompute needs the paths launch")
    caps = bt.register_caps(block_n, block_p, paths)
    n_pairs = n_blk * (n_blk + 1) // 2
    s_buf = _runtime.buffer((n_rows, g, n_pairs, t, t), torch.float32, device)  # S^T of every tile pair
    _runtime.launch(bt._tiles_s_kernel, (n_rows * g * n_pairs,), (
        B, C, s_buf, table, dims.batch, dims.seqlen, n, g, *B.stride(), *C.stride()), device,
        CHUNK=q, T=t, BLOCK_N=block_n, IS_VARLEN=is_varlen, DOT_PRECISION=precision, num_warps=4)
    if scratch is not None and bt.PRE_CS:  # cs (of the processed dt) into scratch plane 3, for every launch below
        _decays(dims, q, q, n_rows, table, dt, A, None, False, out=scratch[3])
    last_compiled = _runtime.launch(bt._tiles_kernel, (n_rows * h * n_blk,), (
        x, dt, A, B, C, D_arg, init_arg, dy, _or(states, dH), dH, _or(dx, x), _or(dB_buf, filler), _or(dC_buf, filler),
        filler, _or(carry, filler), table, s_buf, s_units, d_units, dims.batch, dims.seqlen, h, p, n, h // g, plane,
        *x.stride(), *dt.stride(), *B.stride(), *C.stride(), *dy.stride(), *bc_strides, *stride_D, *init_strides),
        device, CHUNK=q, T=t, BLOCK_P=block_p, BLOCK_N=block_n, HAS_D=D is not None,
        HAS_INIT=initial_states is not None, IS_VARLEN=is_varlen, DOT_PRECISION=precision, MODE=mode,
        SPLIT_MASK=mask, NEED_DX=dx is not None, NEED_DA=need_da, NEED_DB=dB_buf is not None,
        NEED_DC=dC_buf is not None, PATHS=not paths, PRE_CS=scratch is not None and bt.PRE_CS,
        K_HALVES=bt.TILES_K_HALVES if k_halves is None else k_halves, PAIR_MODE=pair_mode, SCALED=scaled,
        num_warps=warps or bt.TILES_WARPS,
        num_stages=stages or bt.TILES_STAGES, **_cap(maxnreg or caps[0]))
    r = h // g
    # the paths per (chunk row, group, block, block of heads, side), summed over the heads of the block: at most
    # PATHS_HEADS, fewer where that leaves fewer than about two programs an SM
    pt = min(paths_tile or bt.PATHS_TILE, q)
    paths_programs = n_rows * g * (q // pt) * 2
    paths_hpp = paths_heads or min(bt.PATHS_HEADS, heads_per_program(r, paths_programs, 2, device))
    paths_hb = -(-r // paths_hpp) if paths and (need_bc or need_da) else 0
    # heads summed by a program of the pair launch: all of the group's, unless that leaves fewer than about four
    # programs an SM (1x2K of the 2.7B shape: 8 chunk rows x 10 tile pairs)
    bc_programs = n_rows * g * (n_blk * (n_blk + 1) // 2)
    bc_hpp = bc_heads or heads_per_program(r, bc_programs, 4, device)
    bc_hb = -(-r // bc_hpp)
    # the deterministic mode's slots (each written by one program, summed in a fixed order): the paths launch's
    # head blocks (every token written: not zeroed), summed into dB and dC before the pair launch's slots (per tile
    # block and head block; zeroed, since the pairs past a chunk's end are never written) are allocated and added to
    # them; and the pair sums (rows per j-block, columns per i-block), which the dA launch adds
    dB_out, dC_out = dB_buf, dC_buf
    psum = None
    slot_elems = 0
    if deterministic:
        if not paths:
            raise ValueError("_tiles_launch: the deterministic mode needs the paths launch")
        slot_elems = dims.batch * dims.seqlen * g * n
        if need_da:
            psum = torch.zeros((n_blk + 1, n_rows, h, q), dtype=torch.float32, device=device)

    def run_paths(sides, dB_out, dC_out, carry_here, accumulate=False):
        """The paths launch, side 0 (dB), 1 (dC, inpath) or both (2), into dB_out and dC_out: by atomics, or in the
        deterministic mode into slots per block of heads, then summed into them (or, accumulate, added to them)."""
        dB_arg, dC_arg = (dB_out, dC_out) if not deterministic else (
            _runtime.empty((paths_hb, *o.shape), torch.float32, device) if o is not None else None
            for o in (dB_out, dC_out))
        _runtime.launch(bt._tiles_paths_kernel, (paths_programs // (1 if sides == 2 else 2) * paths_hb,), (
            x, dt, C, init_arg, dy, _or(states, dH), dH, _or(dB_arg, filler), _or(dC_arg, filler), scratch,
            _or(carry, filler), table, s_units, d_units, dims.batch, dims.seqlen, h, p, n, r, g, paths_hpp, paths_hb,
            plane, slot_elems,
            *x.stride(), *dt.stride(), *C.stride(), *dy.stride(), *bc_strides, *init_strides),
            device, CHUNK=q, T=pt, BLOCK_P=block_p, BLOCK_N=block_n, HAS_INIT=initial_states is not None,
            IS_VARLEN=is_varlen, DOT_PRECISION=precision, MODE=mode, SPLIT_MASK=mask, NEED_DA=need_da,
            NEED_DB=dB_arg is not None, NEED_DC=dC_arg is not None, DET=deterministic, SIDES=sides,
            CARRY=carry_here, AHEAD=bt.PATHS_AHEAD, SCALED=scaled, num_warps=paths_warps or bt.PATHS_WARPS,
            num_stages=paths_stages or bt.paths_stages(x.element_size(), device),
            **_cap(paths_maxnreg or bt.PATHS_MAXNREG))
        if deterministic:
            _sum_slots(((dB_out, dB_arg), (dC_out, dC_arg)), accumulate=accumulate)

    if paths_hb and not split:
        run_paths(2, dB_buf, dC_buf, not carry_given)
    elif paths_hb and dB_buf is not None:  # (split: the dB side now, the dC side after the recompute)
        run_paths(0, dB_buf, None, False)
    if deterministic:  # the pair launch's slots (the paths' are summed and freed)
        dB_buf, dC_buf = (torch.zeros((n_blk * bc_hb, *o.shape), dtype=torch.float32, device=device)
                          if o is not None else None for o in (dB_out, dC_out))
    if need_bc or need_da:
        _runtime.launch(bt._tiles_bc_kernel, (bc_programs * bc_hb,), (
            x, dt, B, C, dy, _or(dB_buf, filler), _or(dC_buf, filler), scratch, table, s_buf, _or(psum, filler),
            dims.batch, dims.seqlen, h, n, p, h // g, g, bc_hpp, bc_hb, plane, slot_elems,
            *x.stride(), *dt.stride(), *B.stride(), *C.stride(), *dy.stride(), *bc_strides),
            device, CHUNK=q, T=t, BLOCK_P=block_p, BLOCK_N=block_n, IS_VARLEN=is_varlen, DOT_PRECISION=precision,
            MODE=mode, SPLIT_MASK=mask, NEED_DA=need_da, NEED_DB=dB_buf is not None, NEED_DC=dC_buf is not None,
            DET=deterministic, COL_SUMS=not cols,
            num_warps=bc_warps or caps[1], num_stages=bc_stages or bt.pair_stages(block_n, block_p, x.element_size()),
            **_cap(bc_maxnreg or caps[2]))
    if deterministic:
        _sum_slots(((dB_out, dB_buf),), accumulate=True)
        _sum_slots(((dC_out, dC_buf),), accumulate=not split)  # (split: dC's paths come after)
        dB_buf = dC_buf = None
    if split and paths_hb and (dC_out is not None or need_da):
        # the states, stored over dH now that nothing reads dH any more (with the carry, which needs both), then the
        # dC side of the paths
        recompute(carry, dH)
        run_paths(1, None, dC_out, False, accumulate=True)
    if not need_da:
        return None
    part = _runtime.buffer((2 if bias_sum else 1, n_rows, h), torch.float32, device)
    da_hb = bt.da_heads(q, h)
    n_da_blocks = -(-h // da_hb)
    raw_dt, raw_bias, softplus, lo, hi = raw
    _runtime.launch(bt._tiles_da_kernel, (n_rows * n_da_blocks,), (
        dt, A, scratch, carry, _or(ddt, scratch), part, table, _or(psum, scratch), raw_dt, _or(raw_bias, A),
        dims.batch, dims.seqlen, h, plane, n_da_blocks, *dt.stride(), *raw_dt.stride(), float(lo), float(hi)),
        device, CHUNK=q, BLOCK_H=da_hb, IS_VARLEN=is_varlen, NEED_DDT=ddt is not None,
        PAIR_SLOTS=n_blk + 1 if deterministic else 0, COLS_FROM_BRACKET=cols, HAS_DT_BIAS=raw_bias is not None,
        DT_SOFTPLUS=softplus, BIAS_SUM=bias_sum, num_warps=bt.DA_WARPS)
    return part


def _sum_slots(pairs, accumulate: bool) -> None:
    """For each (out, slots) pair with an out: out = (or, accumulating, +=) the sum of slots over their first
    dimension, the deterministic mode's fixed-order sum (torch.sum over a dimension: no atomics, the same order every
    run)."""
    for out, slots in pairs:
        if out is None:
            continue
        if accumulate:
            out += slots.sum(0)
        else:
            torch.sum(slots, 0, out=out)


def _cap(maxnreg):
    """A launch's register cap as launch options (none for None, or under the interpreter)."""
    return {} if maxnreg is None or _runtime.interpreter_enabled() else {"maxnreg": maxnreg}


def _or(t, other):
    return t if t is not None else other


__all__ = ["ssd_backward"]
