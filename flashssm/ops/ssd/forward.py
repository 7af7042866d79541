"""ssd_scan forward: one fused Triton launch, after a small preparation launch of dt's cumsums (see below).

One program per (chunk, sequence, head, block of headdim). Programs take tickets from an atomic
counter in launch order, ticket order being chunk-position-major (chunk k of every sequence
before chunk k+1 of any), so a program only ever waits on a program that started before it:
deadlock-free by construction, and the interpreter (which runs programs one after another)
executes the same code. On long inputs a "chunk" here is a span of several of the caller's
chunks (LaunchConfig.group): the sweeps below are sub-chunk recurrences that do not care where
chunks end, and fewer, longer programs pay their fixed costs (ticket, hand-over, first loads)
fewer times.

Each program, for its chunk of Q tokens and its state block h: [BLOCK_P, N]:
  A. sweeps the chunk in sub-chunks of SUB tokens, accumulating the chunk's own state
     S = sum_j exp(sum_{j<k<=end} dt_k A) dt_j x_j B_j^T            (no dependency)
  B. waits for the state entering the chunk, H_prev (published by the program of chunk k-1 of
     the same sequence and head), publishes H = exp(sum dt A) H_prev + S for chunk k+1 at once,
     so the serial chain between programs is one load, one multiply-add and one store long;
  C. sweeps the sub-chunks again for the output, with the running state in registers (kept
     transposed, [N, BLOCK_P], so that its update is an M = N matrix product):
     y_i = sum_{j<=i in sub-chunk} (C_i.B_j) exp(cs_i - cs_j) dt_j x_j + exp(cs_i) C_i H_run
     H_run <- exp(cs_end) H_run + (the sub-chunk's own state)
     then y += D x and y *= silu(z).

A small preparation launch first writes dt (bias, softplus, limits applied) and its cumsums within each sub-chunk
(`_ssd_decays_kernel`), which the sweeps load instead of computing them: the cumsum, the sub-chunk total and the moves
of these vectors between layouts were 12 of the output sweep's 19 barriers. The call is 5-10 % faster with it where
the forward publishes early, 1-2 % where it publishes late (benchmarks/notes/ssd_forward.md, sixteenth session).

The hand-over uses one state slot and one flag per chain (sequence, head, headdim block): the
only reader of a slot is the next chunk's program, which is also its next writer, so a slot is
reused in place. flag = k + 1 means "the state after chunk k is in the slot"; the last chunk of
a chain puts the flag back to 0 and the program with the last ticket resets the ticket counter, so
the workspace is clean after every launch and no memset launch is needed.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.checks import SSDDims, check_register_cap
from flashssm._runtime import workspace
from flashssm.ops.ssd import forward_gluon
from flashssm.ops.triton_common import (LOG2E, fast_exp, fp16_scale, launch_dependents, prefetch, process_dt,
                                       store_tile, take_ticket)


@triton.jit
def _decay_weights(cs, last):
    """exp(last - cs) as 2^(last log2 e - cs log2 e): one explicit fma (no contraction left to the compiler: the
    Gluon kernel's bits) and ex2.approx.ftz (tl.exp2: the MUFU alone)."""
    return tl.exp2(tl.fma(cs, -LOG2E, last * LOG2E))


@triton.jit
def _chunk_decays(dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                  HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr):
    """dt of tokens t (0 off the end), the inclusive cumsum of dt A, and its total: [SUB], [SUB], []."""
    dt = tl.load(dt_base + t * stride_dt_t, mask=mask_t, other=0.0).to(tl.float32)
    dt = tl.where(mask_t, process_dt(dt, dt_bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), 0.0)
    return dt, tl.cumsum(dt * A, axis=0), tl.sum(dt * A, axis=0)


@triton.jit
def _sub_decays(decays, s0, length, dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr, PRE: tl.constexpr, CHUNK: tl.constexpr,
                SUB: tl.constexpr):
    """`_chunk_decays` of the sub-chunk at s0, or (PRE) its values as the preparation launch wrote them. Loaded,
    they are plain loads that Triton repeats in each layout that uses them, where the cumsum and the sum are
    computed in one layout and moved to the others through shared memory (12 barriers a sub-chunk of 19 in the
    output sweep, offline SASS for sm_90). Past the span's end dt is 0 and cs stays at the last value, as
    `_chunk_decays` gives them."""
    if PRE:
        dt = tl.load(decays + t)
        cs = tl.load(decays + CHUNK + t)
        last = tl.load(decays + CHUNK + tl.minimum(s0 + SUB, length) - 1)
        return dt, cs, last
    return _chunk_decays(dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS)


@triton.jit
def _ssd_decays_kernel(dt_ptr, A_ptr, dt_bias_ptr, table_ptr, out_ptr,
                       batch, seqlen, nheads, n_subs, row_stride, stride_dt_b, stride_dt_t, stride_dt_h, dt_lo, dt_hi,
                       span, CHUNK: tl.constexpr, SUB: tl.constexpr, BLOCK_H: tl.constexpr,
                       HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr, IS_VARLEN: tl.constexpr,
                       STORE_DT: tl.constexpr = True, SPAN_GIVEN: tl.constexpr = False,
                       DEPENDENTS: tl.constexpr = False):
    """The preparation launch: for sub-chunk j of span row `rest` and a block of heads, dt (processed) and the
    inclusive cumsum of dt A within the sub-chunk, into row (rest, h) of out, rows `row_stride` apart: dt at the
    span's token, cs CHUNK further on (fp32); STORE_DT False: cs alone, at the token (the backward's tiles, whose dt
    is processed already). Tokens past the span's end get dt 0 and the cumsum's last value, up to the sub-chunk's end,
    so that exp(cs_i - cs_j) of a padding token i never overflows (times its zero operand that would be NaN).
    SPAN_GIVEN (not packed): the rows are spans of the run-time `span` tokens, at most CHUNK (the Gluon kernel's spans
    of any number of chunks: CHUNK only lays the row out). DEPENDENTS (Hopper): the next launch may start at once, if
    it was launched by PDL (`forward_gluon.PDL`: it waits for this launch's end before it reads out_ptr)."""
    if DEPENDENTS:
        launch_dependents()
    pid = tl.program_id(0)
    j = pid % n_subs
    rest = pid // n_subs
    if SPAN_GIVEN:
        b = rest % batch
        k = rest // batch
        start = (k * span).to(tl.int64)
        length = tl.minimum(seqlen - k * span, span)
    else:
        b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    t = j * SUB + tl.arange(0, SUB)
    if j * SUB < length:
        offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
        mask_h = offs_h < nheads
        mask = (t < length)[:, None] & mask_h[None, :]
        base = dt_ptr + b.to(tl.int64) * stride_dt_b + start * stride_dt_t
        dt = tl.load(base + t[:, None] * stride_dt_t + offs_h[None, :] * stride_dt_h, mask=mask, other=0.0)
        bias = 0.0
        if HAS_DT_BIAS:
            bias = tl.load(dt_bias_ptr + offs_h, mask=mask_h, other=0.0).to(tl.float32)[None, :]
        dt = tl.where(mask, process_dt(dt.to(tl.float32), bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS), 0.0)
        A = tl.load(A_ptr + offs_h, mask=mask_h, other=0.0).to(tl.float32)
        cs = tl.cumsum(dt * A[None, :], axis=0)
        out = out_ptr + (rest.to(tl.int64) * nheads + offs_h[None, :]) * row_stride + t[:, None]
        if STORE_DT:
            tl.store(out, dt, mask=mask_h[None, :])
            out += CHUNK
        tl.store(out, cs, mask=mask_h[None, :])


@triton.jit
def chunk_of(rest, table_ptr, batch, seqlen, CHUNK: tl.constexpr, IS_VARLEN: tl.constexpr):
    """Where chunk row `rest` (position-major order) lies: (batch row, sequence, chunk index k,
    first token (int64), length, chunks in the sequence, chain lane (int64))."""
    if IS_VARLEN:
        # table row: sequence, chunk index k, first token, length, chunks in the sequence, chain lane
        row = table_ptr + rest.to(tl.int64) * 6
        seq = tl.load(row).to(tl.int32)
        k = tl.load(row + 1).to(tl.int32)
        start = tl.load(row + 2)
        length = tl.load(row + 3).to(tl.int32)
        n_chunks = tl.load(row + 4).to(tl.int32)
        lane = tl.load(row + 5)
        b = rest * 0
    else:
        b = rest % batch
        k = rest // batch
        seq = b
        start = (k * CHUNK).to(tl.int64)
        length = tl.minimum(seqlen - k * CHUNK, CHUNK)
        n_chunks = tl.maximum(tl.cdiv(seqlen, CHUNK), 1)
        lane = b.to(tl.int64)
    return b, seq, k, start, length, n_chunks, lane


@triton.jit
def _state_row(state_rows_ptr, rest, k, b, batch, s0, CHUNK: tl.constexpr, STATE_CHUNK: tl.constexpr,
               IS_VARLEN: tl.constexpr):
    """The row of `entering_states`' layout (chunks of STATE_CHUNK tokens, position-major) for the chunk starting s0
    tokens into the span of chunk row `rest` (span index k, batch row b): packed, the span table's entry of
    `varlen_state_rows`; dense, (k * spans' chunks + s0 // STATE_CHUNK) * batch + b. int64."""
    if IS_VARLEN:
        row = tl.load(state_rows_ptr + rest.to(tl.int64) * (CHUNK // STATE_CHUNK) + s0 // STATE_CHUNK)
    else:
        row = ((k * (CHUNK // STATE_CHUNK) + s0 // STATE_CHUNK) * batch + b).to(tl.int64)
    return row


@triton.jit
def _ssd_fwd_kernel(
    x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, z_ptr, dt_bias_ptr, init_ptr, y_ptr, final_ptr,
    ypre_ptr, states_ptr, counter_ptr, flag_ptr, slot_ptr, table_ptr, decays_ptr, carry_ptr, state_rows_ptr,
    scale_ptr, batch, seqlen, nheads, headdim, dstate, heads_per_group, n_pblocks, n_programs,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_B_b, stride_B_t, stride_B_g, stride_B_n,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_z_b, stride_z_t, stride_z_h, stride_z_p,
    stride_y_b, stride_y_t, stride_y_h, stride_y_p,
    stride_D_h, stride_D_p,
    stride_init_s, stride_init_h, stride_init_p, stride_init_n,
    stride_final_s, stride_final_h, stride_final_p, stride_final_n,
    dt_lo, dt_hi,
    CHUNK: tl.constexpr, SUB: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr,
    HAS_INIT: tl.constexpr, STORE_FINAL: tl.constexpr, IS_VARLEN: tl.constexpr,
    EARLY_PUBLISH: tl.constexpr, DOT_PRECISION: tl.constexpr, M_PRECISION: tl.constexpr, M_SPLIT: tl.constexpr,
    OUTPUT: tl.constexpr, STORE_YPRE: tl.constexpr, STORE_STATES: tl.constexpr, PREFETCH: tl.constexpr,
    STATE_CHUNK: tl.constexpr = 1, SUB_A: tl.constexpr = 64, PRE_DECAYS: tl.constexpr = False,
    PRE_SUB: tl.constexpr = 64, CARRY: tl.constexpr = False, HALVES: tl.constexpr = False,
    SWEEP_STATES: tl.constexpr = False, SCALED_STATES: tl.constexpr = False,
):
    ticket = take_ticket(counter_ptr, n_programs)  # launch order, not blockIdx order
    pb = ticket % n_pblocks
    rest = ticket // n_pblocks
    h = rest % nheads
    rest = rest // nheads
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    chain = (lane * nheads + h) * n_pblocks + pb
    g = h // heads_per_group

    offs_p = pb * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    offs_s = tl.arange(0, SUB)
    mask_p = offs_p < headdim
    mask_n = offs_n < dstate
    mask_np = mask_n[:, None] & mask_p[None, :]
    in_dtype = x_ptr.dtype.element_ty

    A = tl.load(A_ptr + h).to(tl.float32)
    dt_bias = 0.0
    if HAS_DT_BIAS:
        dt_bias = tl.load(dt_bias_ptr + h).to(tl.float32)
    # int64 bases: (token * stride) passes 2^31 on long inputs
    x_base = x_ptr + b.to(tl.int64) * stride_x_b + h.to(tl.int64) * stride_x_h + start * stride_x_t
    dt_base = dt_ptr + b.to(tl.int64) * stride_dt_b + h.to(tl.int64) * stride_dt_h + start * stride_dt_t
    B_base = B_ptr + b.to(tl.int64) * stride_B_b + g.to(tl.int64) * stride_B_g + start * stride_B_t
    C_base = C_ptr + b.to(tl.int64) * stride_C_b + g.to(tl.int64) * stride_C_g + start * stride_C_t
    # the state is kept transposed, [BLOCK_N, BLOCK_P]: its update is then an M = BLOCK_N product
    slot = slot_ptr + chain * (BLOCK_P * BLOCK_N) + offs_n[:, None] * BLOCK_P + tl.arange(0, BLOCK_P)[None, :]
    final = (final_ptr + seq.to(tl.int64) * stride_final_s + h * stride_final_h
             + offs_p[None, :] * stride_final_p + offs_n[:, None] * stride_final_n)
    is_last = k + 1 == n_chunks
    # the span's dt and in-sub-chunk cumsums of dt A, when a preparation launch wrote them: [dt | cs] rows of CHUNK
    decays = decays_ptr + (rest.to(tl.int64) * nheads + h) * (2 * CHUNK)

    if EARLY_PUBLISH:
        # A. the chunk's own state from a zero state, before any wait
        # (its own sub-chunk, SUB_A: the sweep has one product a step, and fewer, larger steps pay the
        # per-step costs, the decay of S and the cumsum, fewer times)
        # (HALVES: two of the caller's chunks, each half's own state apart, the second's from the half's start)
        S, total = _own_state(0, tl.minimum(length, STATE_CHUNK) if HALVES else length, decays, dt_base, stride_dt_t,
                              A, dt_bias, dt_lo, dt_hi, x_base, stride_x_t, stride_x_p, B_base, stride_B_t,
                              stride_B_n, offs_p, offs_n, mask_p, mask_n, HAS_DT_BIAS, DT_SOFTPLUS,
                              PRE_DECAYS and PRE_SUB == SUB_A, CHUNK, SUB_A, BLOCK_N, BLOCK_P, DOT_PRECISION)
        if HALVES:
            S2, total2 = _own_state(STATE_CHUNK, length, decays, dt_base, stride_dt_t, A, dt_bias, dt_lo, dt_hi,
                                    x_base, stride_x_t, stride_x_p, B_base, stride_B_t, stride_B_n, offs_p, offs_n,
                                    mask_p, mask_n, HAS_DT_BIAS, DT_SOFTPLUS, PRE_DECAYS and PRE_SUB == SUB_A, CHUNK,
                                    SUB_A, BLOCK_N, BLOCK_P, DOT_PRECISION)
    # B. the state entering this chunk
    if k > 0:
        seen = tl.atomic_add(flag_ptr + chain, 0, sem="acquire")
        while seen != k:
            seen = tl.atomic_add(flag_ptr + chain, 0, sem="acquire")
        H = tl.load(slot, cache_modifier=".cg").to(tl.float32)  # [BLOCK_N, BLOCK_P], through L2
    elif HAS_INIT:
        init = (init_ptr + seq.to(tl.int64) * stride_init_s + h * stride_init_h
                + offs_p[None, :] * stride_init_p + offs_n[:, None] * stride_init_n)
        H = tl.load(init, mask=mask_np, other=0.0).to(tl.float32)
    else:
        H = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)
    if HALVES:  # hand on the state after both halves, then store the states entering them (rows of the halves)
        H_mid = H * tl.exp(total) + S
        _publish(H_mid * tl.exp(total2) + S2, slot, final, mask_np, flag_ptr + chain, k, is_last, STORE_FINAL)
        _store_state(states_ptr, carry_ptr, scale_ptr, 2 * k * batch + b, nheads, h, n_pblocks, pb, H, BLOCK_N,
                     BLOCK_P, CARRY, SCALED_STATES)
        if length > STATE_CHUNK:  # (a last span of one chunk has no second row)
            _store_state(states_ptr, carry_ptr, scale_ptr, (2 * k + 1) * batch + b, nheads, h, n_pblocks, pb, H_mid,
                         BLOCK_N, BLOCK_P, CARRY, SCALED_STATES)
    else:
        if STORE_STATES and EARLY_PUBLISH and not SWEEP_STATES:  # for the backward in sweeps: the state entering
            # every chunk, [BLOCK_N, BLOCK_P]
            _store_state(states_ptr, carry_ptr, scale_ptr, rest, nheads, h, n_pblocks, pb, H, BLOCK_N, BLOCK_P,
                         CARRY, SCALED_STATES)
        if EARLY_PUBLISH:  # hand the next chunk its state now: the serial chain stays short
            _publish(H * tl.exp(total) + S, slot, final, mask_np, flag_ptr + chain, k, is_last, STORE_FINAL)

    # C. the output, sub-chunk by sub-chunk, with the running state H
    if OUTPUT:
        if HAS_D:
            D = tl.load(D_ptr + h * stride_D_h + offs_p * stride_D_p, mask=mask_p, other=0.0).to(tl.float32)
        y_base = y_ptr + b.to(tl.int64) * stride_y_b + h.to(tl.int64) * stride_y_h + start * stride_y_t
        ypre_base = ypre_ptr + b.to(tl.int64) * stride_y_b + h.to(tl.int64) * stride_y_h + start * stride_y_t
        z_base = z_ptr + b.to(tl.int64) * stride_z_b + h.to(tl.int64) * stride_z_h + start * stride_z_t
        causal = offs_s[:, None] >= offs_s[None, :]
        if SWEEP_STATES and IS_VARLEN:
            if length == 0:  # an empty sequence's chunk, which the sweep below never enters: its (initial) state
                empty_row = _state_row(state_rows_ptr, rest, k, b, batch, 0, CHUNK, STATE_CHUNK, IS_VARLEN)
                _store_state(states_ptr, carry_ptr, scale_ptr, empty_row, nheads, h, n_pblocks, pb, H, BLOCK_N,
                             BLOCK_P, False, SCALED_STATES)
        for s0 in range(0, length, SUB):
            t = s0 + offs_s
            mask_t = t < length
            mask_tp = mask_t[:, None] & mask_p[None, :]
            mask_tn = mask_t[:, None] & mask_n[None, :]
            if SWEEP_STATES:  # for the tiles backward: the state entering each of its chunks (STATE_CHUNK tokens, a
                # divisor of CHUNK), as this sweep runs it
                if s0 % STATE_CHUNK == 0:
                    row = _state_row(state_rows_ptr, rest, k, b, batch, s0, CHUNK, STATE_CHUNK, IS_VARLEN)
                    _store_state(states_ptr, carry_ptr, scale_ptr, row, nheads, h, n_pblocks, pb, H, BLOCK_N,
                                 BLOCK_P, False, SCALED_STATES)
            if PREFETCH:  # the next sub-chunk's rows into L2: its loads, issued at the end of this
                # iteration and waited for at the top of the next, then come from L2, not DRAM
                _prefetch_rows(tl.minimum(t + SUB, length - 1), pb * BLOCK_P, headdim, dstate,
                               x_base, stride_x_t, stride_x_p, z_base, stride_z_t, stride_z_p,
                               B_base, stride_B_t, stride_B_n, C_base, stride_C_t, stride_C_n,
                               dt_base, stride_dt_t, BLOCK_P, BLOCK_N, HAS_Z)
            dt, cs, last = _sub_decays(decays, s0, length, dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo,
                                       dt_hi, HAS_DT_BIAS, DT_SOFTPLUS, PRE_DECAYS and PRE_SUB == SUB, CHUNK, SUB)
            x_s = tl.load(x_base + t[:, None] * stride_x_t + offs_p[None, :] * stride_x_p, mask=mask_tp, other=0.0)
            B_s = tl.load(B_base + t[:, None] * stride_B_t + offs_n[None, :] * stride_B_n, mask=mask_tn, other=0.0)
            C_s = tl.load(C_base + t[:, None] * stride_C_t + offs_n[None, :] * stride_C_n, mask=mask_tn, other=0.0)
            # the incoming state's share, then the sub-chunk's own tokens on top (one accumulator). With fp16 inputs
            # and dt near 0, H ~ dt x B and m ~ dt C.B^T fall into fp16's subnormals (below 6e-5) and lose their
            # digits: each is then scaled by its largest value before the rounding and the product back after it, as
            # `_state_update` scales its w (bf16 has the exponent range and takes the plain products)
            if in_dtype == tl.float16 and M_SPLIT:
                h_max = fp16_scale(H)
                y = tl.dot(C_s, (H * (1.0 / h_max)).to(in_dtype), input_precision=DOT_PRECISION)
                y = y * (h_max * fast_exp(cs))[:, None]
            else:
                y = tl.dot(C_s, H.to(in_dtype), input_precision=DOT_PRECISION) * fast_exp(cs)[:, None]
            cb = tl.dot(C_s, tl.trans(B_s), input_precision=DOT_PRECISION)  # [SUB, SUB]
            # (cs_i log2 e - cs_j log2 e by one explicit fma: the Gluon kernel's exponents, as `_decay_weights`)
            e_ij = tl.fma(cs[:, None], LOG2E, -(cs * LOG2E)[None, :])
            m = cb * tl.exp2(tl.where(causal, e_ij, -float("inf"))) * dt[None, :]
            # rounding m to 16 bits was the largest error of the whole kernel (2.46e-3 -> 1.95e-3 vs
            # float64 without it): m is split into two 16-bit parts, or multiplied in tf32
            if in_dtype == tl.float16 and M_SPLIT:
                m_max = fp16_scale(m)
                m = m * (1.0 / m_max)
                m_hi = m.to(in_dtype)
                mx = tl.dot(m_hi, x_s, input_precision=DOT_PRECISION)
                mx = tl.dot((m - m_hi.to(tl.float32)).to(in_dtype), x_s, acc=mx)
                y += m_max * mx
            elif M_SPLIT:
                m_hi = m.to(in_dtype)
                y = tl.dot(m_hi, x_s, acc=y)
                y = tl.dot((m - m_hi.to(tl.float32)).to(in_dtype), x_s, acc=y)  # [SUB, BLOCK_P]
            else:
                y = tl.dot(m, x_s.to(m.dtype), acc=y, input_precision=M_PRECISION, out_dtype=y.dtype)
            if HAS_D:
                y += x_s.to(tl.float32) * D[None, :]
            if STORE_YPRE:  # y before the gate, which the backward's dz needs
                tl.store(ypre_base + t[:, None] * stride_y_t + offs_p[None, :] * stride_y_p,
                         y.to(y_ptr.dtype.element_ty), mask=mask_tp)
            if HAS_Z:
                zv = tl.load(z_base + t[:, None] * stride_z_t + offs_p[None, :] * stride_z_p,
                             mask=mask_tp, other=0.0).to(tl.float32)
                y = y * zv * tl.sigmoid(zv)
            tl.store(y_base + t[:, None] * stride_y_t + offs_p[None, :] * stride_y_p,
                     y.to(y_ptr.dtype.element_ty), mask=mask_tp)
            # (with an early publish the update after the last sub-chunk is wasted, but skipping it under
            # an `if` miscompiles on Hopper with triton 3.6 when SUB < 64: wrong outputs)
            H = _state_update(H, B_s, x_s, _decay_weights(cs, last) * dt, tl.exp(last), DOT_PRECISION)
    elif not EARLY_PUBLISH:
        # states only, late publish (many chains): one sweep of the span with the running state, which is
        # stored at the start of each of the caller's chunks (STATE_CHUNK tokens)
        offs_a = tl.arange(0, SUB_A)
        if IS_VARLEN:
            if length == 0:  # an empty sequence's chunk, which the sweep below never enters: its (initial) state
                empty_row = _state_row(state_rows_ptr, rest, k, b, batch, 0, CHUNK, STATE_CHUNK, IS_VARLEN)
                _store_state(states_ptr, carry_ptr, scale_ptr, empty_row, nheads, h, n_pblocks, pb, H, BLOCK_N,
                             BLOCK_P, CARRY, SCALED_STATES)
        for s0 in range(0, length, SUB_A):
            t = s0 + offs_a
            mask_t = t < length
            if s0 % STATE_CHUNK == 0:
                row = _state_row(state_rows_ptr, rest, k, b, batch, s0, CHUNK, STATE_CHUNK, IS_VARLEN)
                _store_state(states_ptr, carry_ptr, scale_ptr, row, nheads, h, n_pblocks, pb, H, BLOCK_N, BLOCK_P,
                             CARRY, SCALED_STATES)
            dt, cs, last = _sub_decays(decays, s0, length, dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo,
                                       dt_hi, HAS_DT_BIAS, DT_SOFTPLUS, PRE_DECAYS and PRE_SUB == SUB_A, CHUNK, SUB_A)
            x_s = tl.load(x_base + t[:, None] * stride_x_t + offs_p[None, :] * stride_x_p,
                          mask=mask_t[:, None] & mask_p[None, :], other=0.0)
            B_s = tl.load(B_base + t[:, None] * stride_B_t + offs_n[None, :] * stride_B_n,
                          mask=mask_t[:, None] & mask_n[None, :], other=0.0)
            H = _state_update(H, B_s, x_s, _decay_weights(cs, last) * dt, tl.exp(last), DOT_PRECISION)
    if not EARLY_PUBLISH:
        _publish(H, slot, final, mask_np, flag_ptr + chain, k, is_last, STORE_FINAL)


@triton.jit
def _own_state(lo: tl.constexpr, hi, decays, dt_base, stride_dt_t, A, dt_bias, dt_lo, dt_hi, x_base, stride_x_t,
               stride_x_p, B_base, stride_B_t, stride_B_n, offs_p, offs_n, mask_p, mask_n,
               HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr, PRE: tl.constexpr, CHUNK: tl.constexpr,
               SUB_A: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_P: tl.constexpr, DOT_PRECISION: tl.constexpr):
    """The own state of tokens lo..hi of the span (from a zero state at lo), [BLOCK_N, BLOCK_P], and the sum of dt A
    over them."""
    offs_a = tl.arange(0, SUB_A)
    S = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)
    total = 0.0
    for s0 in range(lo, hi, SUB_A):
        t = s0 + offs_a
        mask_t = t < hi
        dt, cs, last = _sub_decays(decays, s0, hi, dt_base, stride_dt_t, t, mask_t, A, dt_bias, dt_lo, dt_hi,
                                   HAS_DT_BIAS, DT_SOFTPLUS, PRE, CHUNK, SUB_A)
        x_s = tl.load(x_base + t[:, None] * stride_x_t + offs_p[None, :] * stride_x_p,
                      mask=mask_t[:, None] & mask_p[None, :], other=0.0)  # [SUB, BLOCK_P]
        B_s = tl.load(B_base + t[:, None] * stride_B_t + offs_n[None, :] * stride_B_n,
                      mask=mask_t[:, None] & mask_n[None, :], other=0.0)  # [SUB, BLOCK_N]
        S = _state_update(S, B_s, x_s, _decay_weights(cs, last) * dt, tl.exp(last), DOT_PRECISION)
        total += last
    return S, total


@triton.jit
def _prefetch_rows(t, p0, headdim, dstate, x_base, stride_x_t, stride_x_p, z_base, stride_z_t, stride_z_p,
                   B_base, stride_B_t, stride_B_n, C_base, stride_C_t, stride_C_n, dt_base, stride_dt_t,
                   BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr, HAS_Z: tl.constexpr):
    """L2 prefetch of tokens t's rows of x and z (this program's columns from p0), B, C and dt: one
    request per 128-byte line, every address inside its row."""
    LINE: tl.constexpr = 1024 // x_base.dtype.element_ty.primitive_bitwidth  # elements a line
    cols_p = tl.minimum(p0 + tl.arange(0, max(1, BLOCK_P // LINE)) * LINE, headdim - 1)[None, :]
    cols_n = tl.minimum(tl.arange(0, max(1, BLOCK_N // LINE)) * LINE, dstate - 1)[None, :]
    prefetch(x_base + t[:, None] * stride_x_t + cols_p * stride_x_p, "L2")
    if HAS_Z:
        prefetch(z_base + t[:, None] * stride_z_t + cols_p * stride_z_p, "L2")
    prefetch(B_base + t[:, None] * stride_B_t + cols_n * stride_B_n, "L2")
    prefetch(C_base + t[:, None] * stride_C_t + cols_n * stride_C_n, "L2")
    prefetch(dt_base + t * stride_dt_t, "L2")


@triton.jit
def _store_state(states_ptr, carry_ptr, scale_ptr, row, nheads, h, n_pblocks, pb, H, BLOCK_N: tl.constexpr,
                 BLOCK_P: tl.constexpr, CARRY: tl.constexpr, SCALED: tl.constexpr):
    """H as the state entering chunk row `row` (position-major), head h, headdim block pb: the backward's
    (rows, nheads, n_pblocks, BLOCK_N, BLOCK_P) buffer. CARRY (one headdim block): the buffer holds the gradient of
    the state after that chunk (the backward's chain wrote it there), which H replaces; <that gradient, H> goes to
    carry (rows, nheads) first, the decay gradient's term for the paths over the whole chunk (unscaled). SCALED (fp16,
    one headdim block: `scaled_states`): the tile is stored over its unit (`tile_unit`), which goes to
    scale_ptr[row, h] (with CARRY the gradient's unit is read from there first)."""
    offs = tl.arange(0, BLOCK_N)[:, None] * BLOCK_P + tl.arange(0, BLOCK_P)[None, :]
    at = states_ptr + ((row.to(tl.int64) * nheads + h) * n_pblocks + pb) * (BLOCK_N * BLOCK_P) + offs
    unit_at = scale_ptr + row.to(tl.int64) * nheads + h
    if CARRY:
        dH = tl.load(at).to(tl.float32)
        carry = tl.sum(tl.sum(dH * H, axis=1), axis=0)
        if SCALED:
            carry = carry * tl.load(unit_at)
        tl.store(carry_ptr + row.to(tl.int64) * nheads + h, carry)
    store_tile(at, 0, unit_at, 0, H, SCALED)


@triton.jit
def _state_update(H, B_s, x_s, w, decay, DOT_PRECISION: tl.constexpr):
    """decay H + B^T (w x): the state after a sub-chunk [BLOCK_N, BLOCK_P], the product in the
    input dtype. With fp16 inputs, w x (dt near 0: w ~ 1e-6) would fall into fp16's subnormals
    (below 6e-5) and lose its digits (fuzzing found 2e-2 errors in the final states), so w is
    scaled by its largest value before the rounding and the product by it after."""
    in_dtype = x_s.dtype
    if in_dtype == tl.float16:
        w_max = tl.maximum(tl.max(tl.abs(w), axis=0), 1e-30)  # (|w|: dt_limit may let dt below 0)
        xw = (x_s.to(tl.float32) * (w / w_max)[:, None]).to(in_dtype)
        return H * decay + w_max * tl.dot(tl.trans(B_s), xw, input_precision=DOT_PRECISION)
    xw = (x_s.to(tl.float32) * w[:, None]).to(in_dtype)
    return tl.dot(tl.trans(B_s), xw, acc=H * decay, input_precision=DOT_PRECISION)


@triton.jit
def _publish(H_out, slot, final, mask_np, flag, k, is_last, STORE_FINAL: tl.constexpr):
    """Hand the state after chunk k to chunk k+1 (slot, then flag = k + 1), or store the final state."""
    if is_last:
        if STORE_FINAL:
            tl.store(final, H_out.to(final.dtype.element_ty), mask=mask_np)
        if k > 0:
            tl.atomic_xchg(flag, 0, sem="relaxed")  # leave the flag clean for the next launch
    else:
        tl.store(slot, H_out.to(slot.dtype.element_ty))
        tl.debug_barrier()  # every thread's part of the slot is written before the flag says so
        tl.atomic_xchg(flag, k + 1, sem="release")


@dataclass(frozen=True)
class LaunchConfig:
    sub: int                  # tokens per sub-chunk (the intra-chunk product's tile)
    block_p: int              # headdim per program
    num_warps: int
    num_stages: int
    early_publish: bool = True  # hand the state on before the output sweep (short chain)
    maxnreg: int | None = None
    m_split: bool = True        # (C.B^T o L o dt) x as two 16-bit products (else one in tf32)
    prefetch: bool = False      # GPU: the output sweep prefetches the next sub-chunk's rows into L2
    group: int = 1              # chunks per program: a program sweeps `group` consecutive chunks of a
                                # chain as one, with no hand-over between them (the result does not
                                # depend on the chunking beyond rounding); storing chunk states with an early
                                # publish: 1, or 2 without output (`entering_states(halves=True)`)
    pre_decays: bool = False    # a preparation launch writes dt and its cumsums (no cumsum in the sweeps)
    sub_a: int | None = None    # tokens a step of the sweeps without output (the own state before an early
                                # publish, the states-only sweep): one product a step; None: `sub`
    gluon: bool = True          # on Hopper: the Gluon kernel (late or early publish) where it covers the call
                                # (forward_gluon.blocker); False: always this module's Triton kernel
    gluon_group: int | None = None  # the Gluon kernel's early publish: chunks a program where not `group` (a run-time
                                # span, `_one_wave_group`: one wave of programs); None: `group`
    gluon_tails: int | None = None  # with gluon_group: the sequences' last spans gathered, this many a program
                                # (`one_wave_tails`); None: a program each

    def __post_init__(self):
        for name in ("group", "gluon_group", "gluon_tails"):
            value = getattr(self, name)
            if (value is not None or name == "group") and (not isinstance(value, int) or value < 1):
                what = "last spans a program" if name == "gluon_tails" else "chunks per program"
                raise ValueError(f"LaunchConfig.{name} must be an int >= 1 ({what}), got {value!r}")
        check_register_cap("LaunchConfig", self.maxnreg)
        if self.sub_a is not None and (not isinstance(self.sub_a, int) or self.sub_a < 16
                                       or self.sub_a & (self.sub_a - 1)):
            raise ValueError(f"LaunchConfig.sub_a must be None or a power of two >= 16, got {self.sub_a!r}")


def pick_config(dims: SSDDims, dtype: torch.dtype, device: torch.device) -> LaunchConfig:
    """A launch configuration from the shape and the GPU: no autotuning at call time.

    About two programs run at once per SM (registers and shared memory allow two); with many
    more independent chains than that, a chain's serial hand-over never holds anything up, and
    the state is published after the output sweep instead (one pass over the chunk, not two).
    Measured on an H100 (benchmarks/notes/ssd_forward.md): 4 warps and 2 stages beat 8 warps,
    more stages and register caps on the 2.7B shape. Cached (a 1x2K call is host-bound: 11 -> 1.5 us a call on this
    project's CPU machine) under a key of everything the choice reads, this module's switches included.
    """
    return _config_for(dims, dtype.itemsize, _resident_programs(device), _config_switches())


def _config_switches() -> tuple:
    """This module's switches that the configuration's choice reads (`_config_for`)."""
    return (PRE_DECAYS, MAX_GROUP_TOKENS, MAX_GROUP_TOKENS_EARLY, GROUP_WAVES, ONE_WAVE, ONE_WAVE_FILL, ONE_WAVE_TAILS,
            TAILS_MIN_TOKENS)


def prepared_switches() -> tuple:
    """The switches and tuning constants of this module and the Gluon kernel's, which a forward's Python path reads: a
    prepared call (`_runtime.Prepared`) replays only while they keep the values it was recorded with. Every upper-case
    global of both (`_runtime.module_switches`), as the training calls' and the other ops' replays check theirs, so
    that one added later is checked without being listed here."""
    return _runtime.module_switches(sys.modules[__name__], forward_gluon)


@_runtime.cached(maxsize=1024)
def _config_for(dims: SSDDims, itemsize: int, resident: int, switches: tuple) -> LaunchConfig:
    # (`switches` holds the module switches read below, only so that the cache sees a change of them)
    many = _many_chains(dims, resident)
    longest = MAX_GROUP_TOKENS if many or dims.cu_seqlens is not None else MAX_GROUP_TOKENS_EARLY
    group = _group(dims, resident, longest)
    cfg = _pick_config(dims.headdim, dims.dstate, dims.chunk_size * group, itemsize, many)
    if PRE_DECAYS:
        cfg = dataclasses.replace(cfg, pre_decays=True)
    if ONE_WAVE and not many and dims.cu_seqlens is None:
        plan = one_wave_tails(dims, resident) if ONE_WAVE_TAILS else None
        span, tails = plan if plan is not None else (_one_wave_group(dims, resident), None)
        cfg = dataclasses.replace(cfg, gluon_group=span, gluon_tails=tails)
    return dataclasses.replace(cfg, group=group) if group > 1 else cfg


def _one_wave_group(dims: SSDDims, resident: int) -> int | None:
    """The Gluon kernel's early publish: chunks a program such that one wave of programs covers the launch, as many
    even spans a sequence as the resident programs hold for every (sequence, head, headdim block of 64) chain, at least
    two, and the wave filling at least ONE_WAVE_FILL of them. Every program then runs at once (the own-state sweeps
    together, the short chain of hand-overs, the output sweeps together) with no second wave and no tail. None where
    no such span fills the GPU (too many chains or too few chunks)."""
    chains = _gluon_chains(dims)
    spans = resident // chains
    chunks = _runtime.cdiv(dims.seqlen, dims.chunk_size)
    if spans < 2 or chunks < 2:
        return None
    group = _runtime.cdiv(chunks, spans)
    if _runtime.cdiv(chunks, group) * chains < ONE_WAVE_FILL * resident:
        return None
    return group


def one_wave_tails(dims: SSDDims, resident: int) -> tuple[int, int] | None:
    """The one wave of `_one_wave_group` with no slot idle: (chunks a span, last spans a program) or None. With s
    spans a chain for `chains` chains, spare = resident - s chains slots stay empty (batch 1 of the 2.7B shape: 240
    programs for 264). Here each chain has s spans of `group` chunks and a shorter last one of L - s group (L its
    chunks), and the last spans go `tails` to a program (`forward_gluon`'s TAILS) in the spare slots, where they run
    without an own state (nothing waits on a last span). Such a program waits for its first chain's state, which
    comes once the other programs' own-state sweeps are done, then sweeps its `tails` last spans; so the wave is even
    where tails x (L - s group) <= group, and `group` is the least that meets it: L tails / (s tails + 1) chunks
    against the even spans' L / s (batch 1, 2.7B shape: 158 chunks against 171 at 1 x 128K, 40 against 43 at 1 x 32K).
    None where the spans would be no shorter, there is no spare slot, or the last spans are under TAILS_MIN_TOKENS."""
    chains = _gluon_chains(dims)
    spans = resident // chains
    spare = resident - spans * chains
    chunks = _runtime.cdiv(dims.seqlen, dims.chunk_size)
    if spans < 2 or spare < 1:
        return None
    tails = _runtime.cdiv(chains, spare)
    group = _runtime.cdiv(chunks * tails, spans * tails + 1)
    if (chunks - spans * group) * dims.chunk_size < TAILS_MIN_TOKENS or group >= _runtime.cdiv(chunks, spans):
        return None
    return group, tails


# The Gluon kernel's early publish in one wave of even spans (H100, 2.7B shape, thirty-second session, the span a
# constexpr: three spans a sequence, 240 programs for 264 slots: 1x8K 0.197 -> 0.177 ms, 1x32K 0.664 -> 0.638, 1x128K
# 2.647 -> 2.570; four spans, 320 programs, a second wave: 0.244, 0.894, 3.471). The span is a run-time value there,
# the kernel compiled for its power-of-two ceiling (`gluon_span`). The Triton kernel keeps the waves rule (its span a
# constexpr: a compile each). False: the Gluon kernel takes `group` too (A/B).
ONE_WAVE = True
ONE_WAVE_FILL = 0.85
# The spare slots of that wave taking the chains' last spans, a few a program, the other spans shorter
# (`one_wave_tails`; H200, 2.7B shape, eighty-third session: the forward 1 x 128K -4.9 %, 1 x 32K -6.2 %, whose last
# spans are 38 and 8 chunks; 1 x 8K's of 2 chunks +8.9 %, not explained: TAILS_MIN_TOKENS keeps the even spans there).
# False: even spans, slots left idle (A/B).
ONE_WAVE_TAILS = True
TAILS_MIN_TOKENS = 2048


# The preparation launch (dt and its cumsums loaded by the sweeps): H100, 2.7B shape, early publish 1x2K 0.093 -> 0.088
# ms, 1x32K 0.987 -> 0.893, 1x128K 3.909 -> 3.537; late publish 8x4K 0.707 -> 0.694, 32x2K 1.366 -> 1.346 (-1 to -2 %
# in three runs) (benchmarks/notes/ssd_forward.md, sixteenth session). False: the cumsums in the sweeps (A/B).
PRE_DECAYS = True


def many_chains(dims: SSDDims, device: torch.device) -> bool:
    """Whether the chains (sequences x heads) are many enough for a late hand-over: at least two for each program the
    GPU runs at once, so that a chain's next program takes its ticket about a round after its predecessor, which has
    finished by then. Where this holds the forward publishes late, and so do the backward's state recompute and its
    gradient chain (not packed); the chain form's sweeps publish early where it does not."""
    return _many_chains(dims, _resident_programs(device))


def _many_chains(dims: SSDDims, resident: int) -> bool:
    return dims.num_seqs * dims.nheads >= 2 * resident


def _group(dims: SSDDims, resident: int, longest: int | None = None) -> int:
    """Chunks per program: as many as keep GROUP_WAVES waves of programs for the GPU (a program's
    fixed costs, its ticket, the hand-over and its first loads, were ~40% of the stall samples at one
    chunk a program on 8x4K; benchmarks/notes/ssd_forward.md), spans of at most `longest` tokens
    (MAX_GROUP_TOKENS by default), and no span longer than a whole sequence needs."""
    longest = MAX_GROUP_TOKENS if longest is None else longest
    group = 1
    while (dims.chunk_size * group < dims.seqlen  # (a span past a whole sequence only grows the buffers)
           and dims.chunk_size * group * 2 <= longest
           and _chunk_rows(dims, dims.chunk_size * group * 2) * dims.nheads >= GROUP_WAVES * resident):
        group *= 2
    return group


# H100, 2.7B shape (tune-group.txt): 1, 2, 4, 8 chunks of 256 a program: 8x4K late 0.988, 0.872,
# 0.806, 0.771 ms; 1x32K early 1.117, 1.070, 1.036, 0.992 ms (group 8 leaves 4.8 waves at 8x4K)
GROUP_WAVES = 4             # keep at least this many waves of resident programs when grouping chunks
MAX_GROUP_TOKENS = 2048     # and sweep at most this many tokens a program
# the forward's early publish (few chains), not packed: longer spans still win where the waves allow them (H100,
# thirty-first session, 1x128K, Gluon kernel: 2048 tokens 2.851 ms, 4096 2.696, 8192 2.600; 1x32K keeps 2048 for
# its waves, 4096 0.758 against 0.688). The backward's spans (many chains) keep MAX_GROUP_TOKENS.
MAX_GROUP_TOKENS_EARLY = 8192


def _resident_programs(device: torch.device) -> int:
    """Programs the GPU runs at once: 2 per SM; under the interpreter, an H100's 132 SMs."""
    return 2 * _runtime.sm_count(device, on_cpu=132)


def _block_n(dstate: int) -> int:
    return max(16, _runtime.next_power_of_2(dstate))


@_runtime.cached(maxsize=256)
def _pick_config(headdim: int, dstate: int, chunk_size: int, itemsize: int, many_chains: bool) -> LaunchConfig:
    block_n = _block_n(dstate)
    # the running state [BLOCK_N, BLOCK_P] lives in registers: keep it at 8K fp32 elements
    block_p = max(16, min(_runtime.next_power_of_2(headdim), 8192 // block_n))
    # the sub-chunk's B and C tiles: at most 16 KB each, so two pipeline stages fit in shared memory
    sub = max(16, min(64, chunk_size, 16384 // (block_n * itemsize)))
    # late publish: the next sub-chunk's rows are prefetched into L2 (8x4K 0.773 -> 0.711 ms, 32x2K 1.506 ->
    # 1.372 on an H100, tune-prefetch.txt); early publish gains nothing (its first sweep has just read them)
    return LaunchConfig(sub=sub, block_p=block_p, num_warps=4, num_stages=2, early_publish=not many_chains,
                        prefetch=many_chains)


def varlen_table(dims: SSDDims, device: torch.device, chunk: int | None = None) -> tuple[torch.Tensor, int, int]:
    """Chunk table for packed sequences, position-major, longest sequences first.

    Rows: (sequence, chunk index, first token, length, chunks in the sequence, lane). A sequence
    of length 0 gets one empty chunk, which hands its initial state to final_states. Lanes
    number the sequences of two chunks or more, the only ones that hand states along.
    Returns the table, the number of rows and the number of lanes. `chunk`: the chunk length, if
    not dims.chunk_size (a program sweeping several chunks as one).
    """
    return _varlen_table(dims.cu_seqlens, chunk or dims.chunk_size, device)


@functools.lru_cache(maxsize=64)
def _varlen_table(cu: tuple[int, ...], q: int, device: torch.device) -> tuple[torch.Tensor, int, int]:
    """`varlen_table` for the offsets `cu` (host values) and chunks of q tokens. Cached: every layer of a model, forward
    and backward, packs the same sequences, and the table is read only by the kernels (its rows build in Python and
    copy to the device once)."""
    rows, n_lanes = _varlen_rows(cu, q)
    table = torch.tensor(rows, dtype=torch.int64).to(device, non_blocking=True)
    return table, len(rows), n_lanes


def balanced_pieces(chains: int, chunks: int, slots: int) -> list[list[tuple[int, int, int, int, int]]]:
    """The late publish's chains (each `chunks` chunks long) over `slots` programs that each sweep about the same
    number of chunks (McNaughton's wrap-around rule): the chains laid one after another along the slots, slot s taking
    the chunks total * s // slots to total * (s + 1) // slots of that line. A chain that crosses from slot s to slot
    s + 1 is cut there: its first piece (the chain's first chunks, as many as lie on slot s + 1) is slot s + 1's first,
    its second piece (the rest) slot s's last, which then starts no sooner than the first piece ends, when each slot
    holds at least one whole chain's chunks (chunks <= total // slots). Per slot, its pieces in sweep order as
    (chain, first chunk, chunks, piece index k, pieces of the chain)."""
    total = chains * chunks
    if chunks > total // slots:
        raise ValueError(f"balanced_pieces: chains of {chunks} chunks are longer than a slot's share of "
                         f"{total // slots}")
    bounds = [total * s // slots for s in range(slots + 1)]
    out = []
    for s in range(slots):
        lo, hi = bounds[s], bounds[s + 1]
        pieces = []
        for c in range(lo // chunks, -(-hi // chunks)):
            a, e = max(lo, c * chunks), min(hi, (c + 1) * chunks)
            if a == c * chunks and e == (c + 1) * chunks:
                pieces.append((c, 0, chunks, 0, 1))
            elif a > c * chunks:  # the chain began on slot s - 1: its first e - a chunks are its first piece, here
                pieces.append((c, 0, e - a, 0, 2))
            else:  # it goes on to slot s + 1, which sweeps its first chunks: here its last e - a
                pieces.append((c, chunks - (e - a), e - a, 1, 2))
        out.append(pieces)
    return out


def varlen_state_rows(dims: SSDDims, span: int, state_chunk: int, device: torch.device) -> torch.Tensor:
    """Packed sequences: for every row of the table of `span`-token spans (`varlen_table(dims, device, span)`), the
    rows in `entering_states`' layout for chunks of `state_chunk` tokens (the table of those chunks, position-major)
    of its span // state_chunk chunks, -1 past its sequence's end: (span rows, span // state_chunk) int64. A forward
    sweeping spans stores the states of the backward's chunks there (`sweep_states`)."""
    return _varlen_state_rows(dims.cu_seqlens, span, state_chunk, device)


@functools.lru_cache(maxsize=64)
def _varlen_state_rows(cu: tuple[int, ...], span: int, q: int, device: torch.device) -> torch.Tensor:
    where = {(row[0], row[1]): i for i, row in enumerate(_varlen_rows(cu, q)[0])}  # (sequence, chunk) -> row
    per = span // q
    out = [[where.get((row[0], row[1] * per + j), -1) for j in range(per)] for row in _varlen_rows(cu, span)[0]]
    return torch.tensor(out, dtype=torch.int64).to(device, non_blocking=True)


@functools.lru_cache(maxsize=64)
def _varlen_rows(cu: tuple[int, ...], q: int) -> tuple[list[tuple[int, ...]], int]:
    """The rows of `varlen_table` on the host, and its number of lanes (at least 1)."""
    lengths = [e - s for s, e in zip(cu, cu[1:])]
    counts = [max(1, -(-n // q)) for n in lengths]
    order = sorted(range(len(counts)), key=lambda s: -counts[s])
    lanes, n_lanes = {}, 0
    for s in order:
        if counts[s] > 1:
            lanes[s] = n_lanes
            n_lanes += 1
    rows = []
    for k in range(counts[order[0]]):
        for s in order:
            if counts[s] <= k:
                break
            rows.append((s, k, cu[s] + k * q, min(q, lengths[s] - k * q), counts[s], lanes.get(s, 0)))
    return rows, max(n_lanes, 1)


def ssd_forward(dims: SSDDims, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                initial_states=None, return_final_states=False, state_dtype=None):
    """Launch the fused forward on validated inputs; returns (y, final_states or None)."""
    y, final, _, _ = launch(dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                            initial_states=initial_states, return_final_states=return_final_states,
                            state_dtype=state_dtype)
    return y, final


def d_operand(D, filler):
    """D as a kernel argument: the tensor and its (head, headdim) strides (0 along headdim for a per-head D), or
    `filler` (any tensor: the kernel never reads it) and zero strides."""
    if D is None:
        return filler, (0, 0)
    return D, (D.stride(0), D.stride(1) if D.dim() == 2 else 0)


def init_operand(initial_states, filler):
    """initial_states as a kernel argument: the tensor and its four strides, or `filler` and zero strides."""
    if initial_states is None:
        return filler, (0, 0, 0, 0)
    return initial_states, initial_states.stride()


def launch(dims: SSDDims, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False, initial_states=None,
           return_final_states=False, state_dtype=None, config: LaunchConfig | None = None, store_ypre=False,
           states=None, state_chunk=None):
    """`ssd_forward` with an explicit launch configuration (for tuning). Returns (y, final states or
    None, y before the gate or None, the compiled kernel, whose n_regs, n_spills and metadata.shared
    are its resource report). y before the gate is written only with `store_ypre` and z. `states`: a buffer that
    receives the state entering every chunk as `entering_states` gives it (only where `stores_states` says the
    launch can); with `state_chunk`, every chunk of that many tokens instead, as the output sweep runs it, in
    `entering_states`' layout for chunks of state_chunk (where `sweep_states` says the launch can)."""
    cfg = config or pick_config(dims, x.dtype, x.device)
    y = _runtime.empty(x.shape, x.dtype, x.device)
    ypre = _runtime.empty(x.shape, x.dtype, x.device) if store_ypre and z is not None else None
    state_dtype = state_dtype or torch.float32
    final = (_runtime.empty((dims.num_seqs, dims.nheads, dims.headdim, dims.dstate), state_dtype, x.device)
             if return_final_states else None)
    if state_chunk is not None and (states is None or not isinstance(state_chunk, int) or state_chunk < 1):
        raise ValueError(f"forward.launch: state_chunk needs `states` and must be an int >= 1, got {state_chunk!r}")
    if states is not None and state_chunk is not None:
        shape = states_shape(dataclasses.replace(dims, chunk_size=state_chunk))
        if not sweep_states(dims, cfg, x, B, C, z, state_chunk):
            raise ValueError(f"forward.launch: this launch cannot store the states entering chunks of {state_chunk}")
        if not states_fit(states, shape, states.dtype, is_scaled(states)):
            want = f"({scaled_size(shape)},) fp16 (scaled)" if is_scaled(states) else f"{shape}"
            raise ValueError(f"forward.launch: states must be a contiguous {want} tensor, got {tuple(states.shape)}")
        if is_scaled(states) and x.dtype != torch.float16:
            raise ValueError("forward.launch: scaled states are for fp16 inputs")
    elif is_scaled(states):
        raise ValueError("forward.launch: scaled states are stored by an output sweep (state_chunk)")
    elif states is not None and not stores_states(dims, cfg):
        raise ValueError("forward.launch: this launch configuration cannot store the entering states")
    compiled = _run(dims, cfg, x, dt, A, B, C, D, z, dt_bias, dt_softplus, initial_states, state_dtype,
                    y=y, ypre=ypre, final=final, states=states, state_chunk=state_chunk)
    return y, final, ypre, compiled


def sweep_states(dims: SSDDims, cfg: LaunchConfig, x, B, C, z, state_chunk: int) -> bool:
    """Whether a forward launch of `cfg` with output can also store, as its output sweep runs, the state entering
    every chunk of `state_chunk` tokens in `entering_states`' layout for those chunks (`launch(states=...,
    state_chunk=...)`): chunks that divide the forward's, and a kernel that writes that layout whole (the Gluon kernel
    where it takes the call: headdim and dstate without padding; the Triton one: one headdim block; packed sequences
    at the rows `varlen_state_rows` gives)."""
    if dims.chunk_size % state_chunk or state_chunk % cfg.sub:
        return False
    if cfg.gluon and _runtime.gpu_code(x) and gluon_blocker(dims, x, B, C, z) is None:
        # (fp16's scaled states, a unit a tile: one headdim block a tile)
        return (state_chunk % forward_gluon.SUB == 0 and dims.dstate == _block_n(dims.dstate)
                and dims.headdim == states_block_p(dims.headdim)
                and (x.dtype != torch.float16 or dims.headdim == forward_gluon.BLOCK_P))
    return cfg.block_p == states_block_p(dims.headdim)


def stores_states(dims: SSDDims, cfg: LaunchConfig) -> bool:
    """Whether a forward launch of `cfg` can also store the state entering every chunk in `entering_states`' layout:
    it publishes early, a program per chunk, one headdim block as wide as entering_states' (the state it stores is
    the one it receives, before its output sweep)."""
    return cfg.early_publish and cfg.group == 1 and cfg.block_p == states_block_p(dims.headdim)


def states_block_p(headdim: int) -> int:
    """The headdim block of the entering states' layout (all of headdim, padded to a power of two)."""
    return max(16, _runtime.next_power_of_2(headdim))


def states_shape(dims: SSDDims) -> tuple[int, int, int, int]:
    """The entering states' layout, which `entering_states` writes and the backward reads: (chunk rows, nheads,
    BLOCK_N, BLOCK_P), zero-padded past dstate and headdim."""
    return chunk_rows(dims), dims.nheads, _block_n(dims.dstate), states_block_p(dims.headdim)


def scaled_size(shape: tuple[int, ...]) -> int:
    """fp16 elements of a scaled states buffer of `shape` ((rows, nheads, BLOCK_N, BLOCK_P)): the tiles, then one fp32
    unit a (row, head) in two fp16 slots."""
    return math.prod(shape) + 2 * shape[0] * shape[1]


def new_states(shape: tuple[int, ...], dtype: torch.dtype, device, scaled: bool = False,
               poison: bool = False) -> torch.Tensor:
    """A states buffer of `shape` in `dtype`, or scaled (fp16 inputs' tiles, `backward_chain.scaled_states`): one
    flat fp16 tensor of `scaled_size(shape)` elements, each (row, head) tile stored over a power of two at or above
    its largest |value| (`triton_common.tile_unit`), those units (fp32) at its tail (`states_units`). One tensor, so
    that whatever keeps the buffer between the forward and the backward (autograd's saved tensors, their hooks) keeps
    the units with it. poison: NaN-filled where the tests ask (`_runtime.empty`)."""
    make = _runtime.empty if poison else _runtime.buffer
    if scaled:
        return make((scaled_size(shape),), torch.float16, device)
    return make(shape, dtype, device)


def is_scaled(states: torch.Tensor | None) -> bool:
    """Whether a states buffer is a scaled one (`new_states`: flat)."""
    return states is not None and states.dim() == 1


def states_units(states: torch.Tensor, tile: int) -> torch.Tensor:
    """The (rows x nheads,) fp32 units at the tail of a scaled states buffer of `tile`-element tiles: a view, made as a
    step of a prepared call's recording (`_runtime.derive`; the forward's records no torch calls), so that a replay
    takes it from its own buffer."""
    return _runtime.derive(_units_view, states, tile)


def _units_view(states: torch.Tensor, tile: int) -> torch.Tensor:
    rows = states.numel() // (tile + 2)
    return states[rows * tile:].view(torch.float32)


def unscaled_states(states: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """A states buffer of `shape` as fp32 values: a scaled one's tiles times their units (tests, tools)."""
    if not is_scaled(states):
        return states.float()
    tiles = states[:math.prod(shape)].view(shape).float()
    return tiles * states_units(states, shape[2] * shape[3]).view(*shape[:2], 1, 1)


def states_fit(states: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype, scaled: bool) -> bool:
    """Whether `states` is a buffer `new_states(shape, dtype, scaled=scaled)` could have made, contiguous."""
    if scaled:
        return (is_scaled(states) and states.dtype == torch.float16 and states.numel() == scaled_size(shape)
                and states.is_contiguous())
    return tuple(states.shape) == tuple(shape) and states.dtype == dtype and states.is_contiguous()


def entering_states(dims: SSDDims, x, dt, A, B, *, dt_bias=None, dt_softplus=False, initial_states=None,
                    state_dtype=None, varlen=None, late_states=None, group=None, sub_a=None,
                    store_dtype=None, pre_decays=False, out=None, carry=None, halves=False,
                    scaled=False) -> torch.Tensor:
    """The state entering every chunk, for the backward: (chunk rows, nheads, BLOCK_N, BLOCK_P) in
    store_dtype (default state_dtype: the dtype of the hand-overs between programs, which is what changes the
    states' values), rows in the launch's chunk order (position-major), zero-padded past dstate/headdim.
    The forward kernel without its output sweep: reads x, B and dt once. Few chains (one long sequence):
    early publish, a program per chunk (its own state, then the hand-over, then the store). Many chains:
    late publish, a program sweeping a span of chunks (the forward's `_group`) with the running state and storing
    it at each chunk start (packed: at `varlen_state_rows`' rows): one sweep instead of two, and fewer programs
    (H100, 2.7B shape: 8x4K 0.61 -> 0.39 ms, 32x2K 1.18 -> 0.74; benchmarks/notes/ssd_backward.md).
    `varlen`: the result of `varlen_table` when the caller has it already (varlen inputs);
    late_states, group, sub_a: force the form, the span and the sweep's step (tuning, tests). pre_decays: dt and its
    cumsums from the preparation launch; off by default here, where it lost (H100, 2.7B shape: 1x32K 0.478 -> 0.492
    ms, 1x128K 1.825 -> 1.896, late 8x4K and 32x2K within 1 %): the states-only sweep has one product a step and
    little else to save. out: the buffer to store into (the layout above, store_dtype); with carry ((rows, nheads)
    fp32), `out` holds the gradient of the state after each chunk, which each program reads, dotted with the state
    entering the chunk into carry, before it stores the state over it (the backward's one buffer for both).
    halves (few chains, not varlen): an early-publish program sweeps two chunks, their own states apart, and hands
    over once for both, storing the two entering states after the wait (half the programs and hand-overs).
    scaled: a scaled fp16 buffer (`new_states`; store_dtype fp16), `out` too."""
    state_dtype = state_dtype or torch.float32
    shape = states_shape(dims)
    block_n, block_p = shape[2:]
    base = _pick_config(dims.headdim, dims.dstate, dims.chunk_size, x.dtype.itemsize, False)
    cfg = LaunchConfig(sub=base.sub, block_p=block_p, num_warps=4 if block_n * block_p <= 8192 else 8,
                       num_stages=base.num_stages, early_publish=True, sub_a=sub_a, pre_decays=pre_decays)
    if late_states is None:
        late_states = many_chains(dims, x.device)
    if halves and (late_states or dims.cu_seqlens is not None):
        raise ValueError("entering_states: halves is an early-publish form for inputs that are not packed")
    if halves:
        cfg = dataclasses.replace(cfg, group=2)
    elif late_states:
        # many chains: one sweep of a span of chunks a program, the states stored on the way, in steps of up to
        # 128 tokens (one product a step: 8x4K 0.381 -> 0.318 ms against steps of 64 on an H100); packed sequences
        # store at the rows `varlen_state_rows` gives
        cfg = dataclasses.replace(cfg, early_publish=False, group=group or _group(dims, _resident_programs(x.device)),
                                  sub_a=sub_a or _states_step(block_n, block_p, x.dtype.itemsize, base.sub))
    if scaled and (store_dtype or state_dtype) != torch.float16:
        raise ValueError(f"entering_states: scaled states are fp16, not {store_dtype or state_dtype}")
    if out is None:
        states = new_states(shape, store_dtype or state_dtype, x.device, scaled)
    elif not states_fit(out, shape, store_dtype or state_dtype, scaled):
        want = f"({scaled_size(shape)},) scaled" if scaled else f"{tuple(shape)}"
        raise ValueError(f"entering_states: out must be a contiguous {want} tensor of "
                         f"{store_dtype or state_dtype}, got {tuple(out.shape)} {out.dtype}")
    else:
        states = out
    if carry is not None and (out is None or tuple(carry.shape) != shape[:2] or carry.dtype != torch.float32):
        raise ValueError(f"entering_states: carry needs out and must be a {tuple(shape[:2])} float32 tensor")
    _run(dims, cfg, x, dt, A, B, B, None, None, dt_bias, dt_softplus, initial_states, state_dtype, states=states,
         varlen=varlen, carry=carry)
    return states


def _states_step(block_n: int, block_p: int, itemsize: int, sub: int) -> int:
    """Tokens a step of the states-only sweep: up to 128, its B and x tiles at most 48 KB (two pipeline
    stages stay under 100 KB of shared memory: two programs an SM), never below the output sweep's step.
    The early-publish forward gains nothing from it (1x32K 0.979 -> 0.973 ms), and there 128 costs registers
    (227 against 166 in the states-only early form: a program fewer an SM), so only this sweep takes it."""
    step = 128
    while step > sub and step * (block_n + block_p) * itemsize > 48 * 1024:
        step //= 2
    return step


def chunk_rows(dims: SSDDims) -> int:
    """Chunks over all sequences (one empty chunk for an empty sequence)."""
    return _chunk_rows(dims, dims.chunk_size)


def _chunk_rows(dims: SSDDims, q: int) -> int:
    if dims.cu_seqlens is None:
        return max(1, _runtime.cdiv(dims.seqlen, q)) * dims.batch
    return _packed_chunk_rows(dims.cu_seqlens, q)


@_runtime.cached(maxsize=256)
def _packed_chunk_rows(offsets: tuple[int, ...], q: int) -> int:
    """A packing's rows of q-token chunks (one at least a sequence, an empty one too); cached: a training call asks
    two or three times, every layer of a model with the same offsets."""
    return sum(max(1, -(-(e - s) // q)) for s, e in zip(offsets, offsets[1:]))


def _run(dims, cfg, x, dt, A, B, C, D, z, dt_bias, dt_softplus, initial_states, state_dtype, *, y=None, ypre=None,
         final=None, states=None, varlen=None, carry=None, state_chunk=None):
    device = x.device
    # the Gluon kernel where it covers the call (the cheap tests first: a 1x2K call is host-bound)
    if (cfg.gluon and y is not None and _runtime.gpu_code(x) and (states is None or state_chunk is not None)
            and gluon_blocker(dims, x, B, C, z) is None):
        return _run_gluon(dims, cfg, x, dt, A, B, C, D, z, dt_bias, dt_softplus, initial_states, state_dtype, y, ypre,
                          final, states, state_chunk)
    block_n = _block_n(dims.dstate)
    n_pblocks = _runtime.cdiv(dims.headdim, cfg.block_p)
    chunk = dims.chunk_size * cfg.group  # (states: a late-publish program stores every chunk's on the way)
    # an early-publish program storing states over two chunks: each half's own state, both stored after the wait
    halves = cfg.early_publish and states is not None and y is None and cfg.group == 2
    if (cfg.early_publish and states is not None and state_chunk is None and cfg.group > 1
            and not (halves and dims.cu_seqlens is None)):
        raise ValueError(f"an early-publish launch stores the states entering spans of 1 chunk, or (no output, not "
                         f"varlen) 2, not {cfg.group}")
    state_rows = x  # (read only by a packed launch that stores states sweeping spans)
    if dims.cu_seqlens is not None:
        table, n_rows, n_lanes = (varlen if varlen is not None and chunk == dims.chunk_size
                                  else varlen_table(dims, device, chunk))
        if states is not None and (state_chunk is not None or not cfg.early_publish):
            state_rows = varlen_state_rows(dims, chunk, state_chunk or dims.chunk_size, device)
    else:
        table = x  # any pointer: IS_VARLEN=False never reads it
        n_rows = _chunk_rows(dims, chunk)
        n_lanes = dims.batch
    n_programs = n_rows * dims.nheads * n_pblocks
    counter, flags, slots = workspace(device).get(n_lanes * dims.nheads * n_pblocks, cfg.block_p * block_n,
                                                  state_dtype)
    extra = {} if cfg.maxnreg is None else {"maxnreg": cfg.maxnreg}
    sub_a = min(cfg.sub_a or cfg.sub, dims.chunk_size)  # (the states-only sweep stores at chunk starts)
    pre_sub = cfg.sub if y is not None else sub_a  # the step of the sweeps that load the preparation's output
    decays = _decays(dims, pre_sub, chunk, n_rows, table, dt, A, dt_bias, dt_softplus) if cfg.pre_decays else A
    precision = _dot_precision(x.dtype)
    any_out = y if y is not None else states
    scaled = is_scaled(states)
    if scaled and (n_pblocks != 1 or cfg.block_p != states_block_p(dims.headdim)):
        raise ValueError("scaled states are stored by launches of one headdim block as wide as the states'")
    units = states_units(states, block_n * cfg.block_p) if scaled else any_out
    D_arg, stride_D = d_operand(D, A)
    z_arg = z if z is not None else x
    y_arg = y if y is not None else x
    init_arg, init_strides = init_operand(initial_states, any_out)
    final_strides = final.stride() if final is not None else (0, 0, 0, 0)
    with _runtime.on_device(device):
        return _runtime.launch(_ssd_fwd_kernel, (n_programs,), (
            x, dt, A, B, C, D_arg, z_arg, dt_bias if dt_bias is not None else A,
            init_arg, y_arg,
            final if final is not None else any_out, ypre if ypre is not None else any_out,
            states if states is not None else any_out, counter, flags, slots, table, decays,
            carry if carry is not None else any_out, state_rows, units,
            dims.batch, dims.seqlen, dims.nheads, dims.headdim, dims.dstate, dims.nheads // dims.ngroups, n_pblocks,
            n_programs,
            *x.stride(), *dt.stride(), *B.stride(), *C.stride(), *z_arg.stride(), *y_arg.stride(), *stride_D,
            *init_strides, *final_strides,
            float(dims.dt_limit[0]), float(dims.dt_limit[1])), device,
            CHUNK=chunk, SUB=cfg.sub, BLOCK_P=cfg.block_p, BLOCK_N=block_n,
            HAS_D=D is not None, HAS_Z=z is not None, HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus,
            HAS_INIT=initial_states is not None, STORE_FINAL=final is not None,
            IS_VARLEN=dims.cu_seqlens is not None, EARLY_PUBLISH=cfg.early_publish,
            DOT_PRECISION=precision, M_PRECISION=precision if x.dtype in (torch.float32, torch.float64) else "tf32",
            M_SPLIT=cfg.m_split and x.dtype in (torch.float16, torch.bfloat16),
            OUTPUT=y is not None, STORE_YPRE=ypre is not None, STORE_STATES=states is not None,
            PREFETCH=cfg.prefetch and _runtime.gpu_code(x), STATE_CHUNK=state_chunk or dims.chunk_size,
            SUB_A=sub_a, PRE_DECAYS=cfg.pre_decays, PRE_SUB=pre_sub, CARRY=carry is not None, HALVES=halves,
            SWEEP_STATES=states is not None and state_chunk is not None, SCALED_STATES=scaled,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages, **extra,
        )


def gluon_blocker(dims: SSDDims, x, B, C, z, states=None) -> str | None:
    """None when a forward launch with output (and `states`, if given) takes the Gluon kernel (forward_gluon.py), else
    why not; a launch's configuration only says whether to ask (`LaunchConfig.gluon`)."""
    capability = _runtime.cuda_capability(_runtime.cuda_index(x)) if _runtime.gpu_code(x) else None
    return forward_gluon.blocker(dims, x, B, C, z, output=True,
                                 stores_states=states is not None, capability=capability)


def gluon_span(dims: SSDDims, cfg: LaunchConfig, *tensors) -> tuple[int, int]:
    """(tokens a program, the kernel's CHUNK) of the Gluon kernel: `group` chunks, a constexpr, or where cfg has a
    `gluon_group` (early publish, not packed) that many chunks as a run-time span, CHUNK its power-of-two ceiling (a
    compile for each doubling, not for each span), unless the span times a stride along seqlen of `tensors` (None:
    absent) passes 2^31 (offsets within a span are 32-bit)."""
    chunk = dims.chunk_size * cfg.group
    if cfg.gluon_group is None or not cfg.early_publish or dims.cu_seqlens is not None:
        return chunk, chunk
    span = dims.chunk_size * cfg.gluon_group
    if span * max(t.stride(1) for t in tensors if t is not None) >= 2**31:
        return chunk, chunk
    ceiling = dims.chunk_size * _runtime.next_power_of_2(cfg.gluon_group)
    return span, ceiling


def _run_gluon(dims, cfg, x, dt, A, B, C, D, z, dt_bias, dt_softplus, initial_states, state_dtype, y, ypre, final,
               states=None, state_chunk=None):
    """The forward by the Gluon kernel, publishing late or early as `cfg` says: the same preparation launch (its
    sub-chunks of 64), tickets, flags and slots (of its headdim blocks of 64) as the Triton kernel's; with `states`,
    the state entering every chunk of `state_chunk` tokens stored on the way (`sweep_states`)."""
    device = x.device
    block_n = dims.dstate
    n_pblocks = dims.headdim // forward_gluon.BLOCK_P
    span, chunk = gluon_span(dims, cfg, x, dt, B, C, y, z, ypre)
    given = span != chunk
    state_rows = x  # (read only by a packed launch that stores states)
    pieces = pieces_blocker(dims, cfg, x, B, C, z, D, states, dt, y, ypre) is None
    if pieces:  # a program a slot, the chains in balanced pieces; the decays' rows whole sequences
        chunk = _pieces_chunk(dims)
        span, given = dims.chunk_size, False  # (the kernel's `span`: a chunk's tokens)
        n_programs = pieces_slots(device)
        table, n_rows, n_lanes = x, dims.batch, dims.batch
    elif dims.cu_seqlens is not None:  # packed: the Triton kernel's table of spans (span == chunk here)
        table, n_rows, n_lanes = varlen_table(dims, device, chunk)
        if states is not None:
            state_rows = varlen_state_rows(dims, chunk, state_chunk, device)
    else:
        table, n_rows, n_lanes = x, _chunk_rows(dims, span), dims.batch  # (IS_VARLEN=False never reads the table)
    tails = gluon_tails(dims, cfg, span, chunk) if not pieces else 0
    if not pieces:
        n_programs = n_rows * dims.nheads * n_pblocks
    if tails:  # the last span row's programs gathered, `tails` chains' last spans a program
        chains = dims.batch * dims.nheads * n_pblocks
        n_programs += _runtime.cdiv(chains, tails) - chains
    counter, flags, slots = workspace(device).get(n_lanes * dims.nheads * n_pblocks,
                                                  forward_gluon.BLOCK_P * block_n, state_dtype)
    pdl = bool(forward_gluon.PDL)  # (the Gluon kernel runs on Hopper only, where PDL is)
    decays = _decays(dims, forward_gluon.SUB, chunk, n_rows, table, dt, A, dt_bias, dt_softplus,
                     span=span if given else None, dependents=pdl)
    D_arg, stride_D = d_operand(D, A)
    z_arg = z if z is not None else x
    init_arg, init_strides = init_operand(initial_states, y)
    final_strides = final.stride() if final is not None else (0, 0, 0, 0)
    if states is not None and (x.dtype == torch.float16) != is_scaled(states):
        raise ValueError("the Gluon kernel stores fp16 inputs' states scaled (forward.new_states), others plain")
    if is_scaled(states) and n_pblocks != 1:
        raise ValueError("scaled states are stored by launches of one headdim block")
    units = states_units(states, block_n * dims.headdim) if is_scaled(states) else y
    # (the TMA form: its tensor descriptors go through `launch` as declared arguments, which a prepared call rebuilds
    # over its replay's tensors)
    descs = (forward_gluon.tma_descriptors(dims, x, B, C, z, D, cfg.early_publish, states, pieces)
             if span % forward_gluon.SUB == 0 else None)
    states_desc = forward_gluon.tma_states_descriptor(dims, x, states) if descs is not None else None
    with _runtime.on_device(device):
        return _runtime.launch(forward_gluon._ssd_fwd_gluon_kernel, (n_programs,), (
            x, B, C, D_arg, z_arg, init_arg, y, ypre if ypre is not None else y, final if final is not None else y,
            decays, counter, flags, slots, states if states is not None else y, table, state_rows, units,
            dims.batch, dims.seqlen, dims.nheads, dims.nheads // dims.ngroups, n_pblocks, n_programs,
            *x.stride()[:3], *B.stride()[:3], *C.stride()[:3], *z_arg.stride()[:3], *y.stride()[:3], *stride_D,
            *init_strides, *final_strides, span, *(descs or (0, 0, 0)), states_desc or 0), device,
            TMA=descs is not None, TMA_STATES=states_desc is not None,
            CHUNK=chunk, SUB=forward_gluon.SUB, BLOCK_P=forward_gluon.BLOCK_P, BLOCK_N=block_n, HAS_D=D is not None,
            HAS_Z=z is not None, STORE_YPRE=ypre is not None, HAS_INIT=initial_states is not None,
            STORE_FINAL=final is not None, EARLY=cfg.early_publish, D_HEAD=D is not None and D.dim() == 1,
            SPAN_GIVEN=given, STORE_STATES=states is not None, STATE_CHUNK=state_chunk or forward_gluon.SUB,
            IS_VARLEN=dims.cu_seqlens is not None,
            PIECES=(2 if forward_gluon.PIECES == "batch" else 1) if pieces else 0, PDL=pdl, launch_pdl=pdl,
            TAILS=tails, num_warps=4)


def gluon_tails(dims: SSDDims, cfg: LaunchConfig, span: int, chunk: int) -> int:
    """The Gluon kernel's TAILS for a launch of `cfg` at the span `gluon_span` gave: cfg's gathered last spans where
    that span is its run-time one (early publish, dense) and the sequence has a last span after another; else 0."""
    if not cfg.gluon_tails or cfg.gluon_group is None or not cfg.early_publish:
        return 0
    if dims.cu_seqlens is not None or span != dims.chunk_size * cfg.gluon_group or dims.seqlen <= span:
        return 0
    return cfg.gluon_tails


def pieces_blocker(dims: SSDDims, cfg: LaunchConfig, x, B, C, z, D, states, *others) -> str | None:
    """None where a Gluon launch of `cfg` takes the balanced pieces (`forward_gluon.PIECES`), else why not: the late
    publish on dense sequences with at least two chains a slot (each chain then cut at most once), the TMA
    form (`forward_gluon.tma_blocker(pieces=True)`), and every offset within a sequence in 32 bits (a piece's offsets
    are from its sequence's start, whose rows the decays lay out whole), on the GPU. `others`: more tensors the kernel
    steps along seqlen (None: absent)."""
    if not forward_gluon.PIECES:
        return "PIECES is off"
    if cfg.early_publish or dims.cu_seqlens is not None:
        return "the early publish, or packed sequences"
    slots = pieces_slots(x.device)
    chains = _gluon_chains(dims)
    if chains < 2 * slots:
        return f"{chains} chains, fewer than two for each of the {slots} slots"
    why = forward_gluon.tma_blocker(dims, x, B, C, z, D, False, states, pieces=True)
    if why is not None:
        return f"the TMA form does not take it: {why}"
    if _pieces_chunk(dims) * max(t.stride(1) for t in (x, B, C, z, *others) if t is not None) >= 2**31:
        return "a sequence's offsets pass 2^31"
    if x.device.type != "cuda":
        return "not on the GPU (the TMA form's descriptors are made on CUDA tensors)"
    return None


def _pieces_chunk(dims: SSDDims) -> int:
    """The balanced pieces' CHUNK: the decays' rows, a whole sequence (a chunk count's power-of-two ceiling: a compile
    for each doubling of seqlen)."""
    return dims.chunk_size * _runtime.next_power_of_2(_runtime.cdiv(dims.seqlen, dims.chunk_size))


def _gluon_chains(dims: SSDDims) -> int:
    """The Gluon kernel's chains: (sequence, head, headdim block of forward_gluon.BLOCK_P), not packed."""
    return dims.batch * dims.nheads * _runtime.cdiv(dims.headdim, forward_gluon.BLOCK_P)


def pieces_slots(device: torch.device) -> int:
    """The balanced pieces' programs: `forward_gluon.PIECES_SLOTS`, or as many as the GPU holds at once."""
    return forward_gluon.PIECES_SLOTS or _resident_programs(device)


def _decays(dims, sub, chunk, n_rows, table, dt, A, dt_bias, dt_softplus, out=None, span=None, dependents=False):
    """The preparation launch: (span rows, nheads, 2, chunk) fp32, dt and its cumsums within steps of `sub` tokens.
    With `out` (fp32, rows of `chunk` for (span row, head)), the cumsums alone go there, of a dt processed already
    (dt_bias None, no softplus, no clamp). `span` (not packed): the rows' spans are that many tokens, at most `chunk`,
    which then only lays the rows out. `dependents` (Hopper): the launch lets the next one start at once, as one
    launched by PDL may (`forward_gluon.PDL`), which then waits for this one's end before it reads `out`."""
    store_dt = out is None
    lo, hi = dims.dt_limit if store_dt else (-math.inf, math.inf)
    if store_dt:
        out = _runtime.buffer((n_rows, dims.nheads, 2, chunk), torch.float32, dt.device)
    n_subs = (span or chunk) // sub
    block_h = min(32, max(2, _runtime.next_power_of_2(dims.nheads)))
    _runtime.launch(_ssd_decays_kernel, (n_rows * n_subs, _runtime.cdiv(dims.nheads, block_h)), (
        dt, A, dt_bias if dt_bias is not None else A, table, out,
        dims.batch, dims.seqlen, dims.nheads, n_subs, chunk * (2 if store_dt else 1), *dt.stride(),
        float(lo), float(hi), span or chunk), dt.device,
        CHUNK=chunk, SUB=sub, BLOCK_H=block_h, HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus,
        IS_VARLEN=dims.cu_seqlens is not None, STORE_DT=store_dt, SPAN_GIVEN=span is not None, DEPENDENTS=dependents,
        num_warps=4)
    return out


def _dot_precision(dtype: torch.dtype) -> str:
    """fp32 inputs follow torch's matmul precision: 'highest' (its default) gets tf32x3, close to
    fp32; 'high' or 'medium' gets one tf32 pass. 16-bit inputs multiply exactly in fp32. float64
    (admitted only through the custom op, for gradcheck) multiplies in full fp32."""
    if dtype == torch.float64:
        return "ieee"
    if dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest":
        return "tf32x3"
    return "tf32"


def supported(dstate: int, device: torch.device) -> str | None:
    """None when the kernel runs here, else why not."""
    if dstate > 256:
        return f"dstate {dstate} > 256"
    if device.type == "cuda" and _runtime.cuda_capability(device.index)[0] < 8:
        return "the kernel needs compute capability 8.0 or newer"
    return None


__all__ = ["ssd_forward", "launch", "entering_states", "stores_states", "sweep_states", "states_shape", "chunk_rows",
           "pick_config", "supported", "LaunchConfig"]
