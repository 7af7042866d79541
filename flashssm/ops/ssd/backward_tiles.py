"""ssd_scan backward: the gradient launch in tiles, with no state carried through a loop.

The chain backward (ops/ssd/backward_chain.py) computes a chunk's gradients with two sweeps of sub-chunks that carry
the running state H and the running state gradient dH ([N, P] fp32) from one sub-chunk to the next. On an H100 that
kernel is latency-bound: 255 registers, two programs an SM, spills, and each sub-chunk's products wait on the
previous sub-chunk's update (benchmarks/notes/ssd_backward.md, tenth session).

Here, once the state entering every chunk (H, `entering_states`) and the gradient of the state after every chunk
(dH, the chain launch `_dstates_kernel`) are in memory, a chunk's gradients need no recurrence at all: with
T-token blocks of a Q-token chunk, cs the chunk's cumulative decay, L_ij = exp(cs_i - cs_j) (i >= j),
S_ij = C_i . B_j and G_ij = dy_i . x_j,

    bracket_j = exp(cs_L - cs_j) B_j dH + sum_{i >= j} S_ij L_ij dy_i         dx_j = dt_j bracket_j + D dy_j
    dB_j     += dt_j exp(cs_L - cs_j) x_j dH^T + sum_{i >= j} V_ij C_i
    dC_i     += exp(cs_i) dy_i H^T + sum_{j <= i} V_ij B_j,      V_ij = sum over the group's heads of G_ij L_ij dt_j

Five or six launches, like a FlashAttention backward (every product has a fresh accumulator; no state carried
through a loop):
- the forward's preparation launch (`forward._decays`, cs alone), per (chunk, block of heads): cs into scratch plane 3,
  which every launch after it loads (where a decay gradient, dB or dC is wanted; with dx alone each tiles program
  computes it). Loaded, cs costs the tiles kernel no cross-warp cumsum or sum and no layout moves (offline SASS for
  sm_90: 31 -> 15 barriers a program).
- `_tiles_s_kernel`, per (chunk, group, tile pair i >= j): S^T (fp32) for the two launches after it, once for all the
  group's heads.
- `_tiles_kernel`, per (chunk, head, block b): bracket, dx and bracket . x for the tokens of b (the pairs with j in b,
  one tile pair per later block), the decay gradient's edge term, and where there is no paths launch the block's
  state paths: dB's and dC's state parts (dstate in slices of 64, an fp32 atomic a head), the inpath terms, the carry.
- `_tiles_paths_kernel` (where `paths_launch` says so), per (chunk, group, block b, block of heads, side): the block's
  state paths, dB's (side 0) and dC's (side 1) state parts summed over the heads before one fp32 atomic an element,
  the inpath terms and the carry.
- `_tiles_bc_kernel`, per (chunk, group, tile pair i >= j, block of heads): per head G, L and
  P_ij = G_ij S_ij L_ij dt_j, whose row sums go to the decay gradient (and its column sums where COLS_FROM_BRACKET is
  off); V summed over the heads, then one product each with C and B for the block of heads instead of one per head.
- `_tiles_da_kernel`, per (chunk, block of heads): the decay gradient's prefix and suffix sums, ddt taken on through
  the clamp, softplus and dt_bias to the raw dt, the shares of dA and of dt_bias's gradient.

The decay gradient (ops/ssd/backward.py has the derivation):
    da_k = exp(cs_L) <dH, H> + sum_{j < k} edge_j + sum_{i >= k} (inpath_i + rows_i - cols_i)
edge_j = dt_j x_j . (the state part of bracket_j), inpath_i = C_i . (the state part of dC_i), rows_i = sum_j P_ij,
cols_j = sum_i P_ij. Only rows - cols is a difference of sums, whose chunk total cancels: both must sum the same pairs.
The pair launch's rows are fp32 products of exact operands; the columns come from the tiles kernel, cols_j =
dt_j bracket_j . x_j - edge_j (COLS_FROM_BRACKET), with bracket's pair products split into two 16-bit parts so that
they carry the pairs to ~16 bits (rounded to bf16 there, dA's error was 20x larger); where they cannot (the TF32 mode,
fp32 inputs at one tf32 pass) the pair launch sums both from its fp32 P tile, which cancel to fp32 rounding. The other
products with a computed operand may round to 16 bits here, where the sweeps' running state gradient needs split
products. The per-token terms go to a scratch (the pair sums by fp32 atomics: this path has them for dB and dC too).
In the deterministic mode (DET) the paths and pair launches store each sum in a slot of its own instead, one program a
slot, and the slots are summed in a fixed order (dB and dC by torch, the pair sums by the dA launch): no float atomics
anywhere, at ~6-10 % of a training call's time and ~190 MiB at 8x4K of the 2.7B shape.
"""

from __future__ import annotations

import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.ssd.backward_chain import _mm_cl, _mm_cr, _mm_vv, _operand
from flashssm.ops.ssd.forward import chunk_of
from flashssm.ops.triton_common import fast_exp, process_dt_grad

# The products with a computed operand that split into two 16-bit products in the SPLIT mode (the others round),
# by bit: 1 B dH (bracket's state part: dx, ddt and the decay gradient's edge term), 2 x dH^T (dB's state part),
# 4 the pair weights times dy (bracket), 8 the pair weights times C (dB), 16 dy H^T (dC's state part and the
# decay gradient's inpath term), 32 the pair weights times B (dC).
TILES_SPLIT_ALL = 63
TILES_SPLIT_DEFAULT = 1 | 16


@triton.jit
def _block_decays(dt_base, stride_dt_t, a_chunk, offs_q, t0, offs_t, length, A):
    """dt (fp32) and the chunk's cumulative decay cs of the tokens t0 + offs_t: the same bits in every program."""
    t = t0 + offs_t
    dt = tl.load(dt_base + t * stride_dt_t, mask=t < length, other=0.0).to(tl.float32)
    before = tl.sum(tl.where(offs_q < t0, a_chunk, 0.0), axis=0)
    return dt, before + tl.cumsum(dt * A, axis=0)


@triton.jit
def _tiles_kernel(
    x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, init_ptr, dy_ptr, states_ptr, dstates_ptr,
    dx_ptr, dB_ptr, dC_ptr, scratch_ptr, carry_ptr, table_ptr, s_ptr, sunit_ptr, dunit_ptr,
    batch, seqlen, nheads, headdim, dstate, heads_per_group, plane,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_B_b, stride_B_t, stride_B_g, stride_B_n,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_dy_b, stride_dy_t, stride_dy_h, stride_dy_p,
    stride_dB_b, stride_dB_t, stride_dB_g,  # dB and dC buffers: (batch, seqlen, g, N) fp32
    stride_D_h, stride_D_p,
    stride_init_s, stride_init_h, stride_init_p, stride_init_n,
    CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_D: tl.constexpr, HAS_INIT: tl.constexpr, IS_VARLEN: tl.constexpr,
    DOT_PRECISION: tl.constexpr, MODE: tl.constexpr, SPLIT_MASK: tl.constexpr,
    NEED_DX: tl.constexpr, NEED_DA: tl.constexpr, NEED_DB: tl.constexpr, NEED_DC: tl.constexpr,
    PATHS: tl.constexpr = True, PRE_CS: tl.constexpr = False, K_HALVES: tl.constexpr = False,
    PAIR_MODE: tl.constexpr = -1, SCALED: tl.constexpr = False,
):
    """Program (chunk row, head, block b): the pairs whose earlier end j is in block b (bracket, dx, the direct part
    of ddt), the edge term, and (PATHS) the block's paths out of the chunk and into it from before (dB's and dC's
    state parts with an fp32 atomic per head, inpath, the carry); without PATHS those are _tiles_paths_kernel's.
    The pairs' shares of dB, dC and of the decay gradient are _tiles_bc_kernel's.
    dy is the gradient reaching y before the gate (gated, in the input dtype), dt the processed dt. K_HALVES (with
    PRE_CS, T >= 32): the pair products (S^T L) dy_i in two halves of the later block's tokens. PAIR_MODE: those
    products' mode where it is not MODE (SPLIT where bracket . x gives the decay gradient's column sums). SCALED: the
    states and dH are fp16 tiles over their units (sunit_ptr, dunit_ptr: (rows, nheads)), taken as the products'
    operands as they are, the products multiplied by the units."""
    N_BLK: tl.constexpr = CHUNK // T
    NS: tl.constexpr = min(BLOCK_N, 64)
    pid = tl.program_id(0)
    blk = pid % N_BLK
    prog_row = pid // N_BLK  # chunk row * nheads + head
    h = prog_row % nheads
    rest = prog_row // nheads
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    t0 = blk * T
    if t0 < length:
        g = h // heads_per_group
        offs_t = tl.arange(0, T)
        offs_q = tl.arange(0, CHUNK)
        offs_p = tl.arange(0, BLOCK_P)
        mask_p = offs_p < headdim
        b64 = b.to(tl.int64)
        h64 = h.to(tl.int64)
        g64 = g.to(tl.int64)
        prog64 = prog_row.to(tl.int64)
        A = tl.load(A_ptr + h).to(tl.float32)
        x_base = x_ptr + b64 * stride_x_b + h64 * stride_x_h + start * stride_x_t
        dt_base = dt_ptr + b64 * stride_dt_b + h64 * stride_dt_h + start * stride_dt_t
        B_base = B_ptr + b64 * stride_B_b + g64 * stride_B_g + start * stride_B_t
        C_base = C_ptr + b64 * stride_C_b + g64 * stride_C_g + start * stride_C_t
        dy_base = dy_ptr + b64 * stride_dy_b + h64 * stride_dy_h + start * stride_dy_t
        dB_base = dB_ptr + b64 * stride_dB_b + g64 * stride_dB_g + start * stride_dB_t
        dC_base = dC_ptr + b64 * stride_dB_b + g64 * stride_dB_g + start * stride_dB_t

        tb = t0 + offs_t  # this block's tokens
        mask_b = tb < length
        mask_bp = mask_b[:, None] & mask_p[None, :]
        scratch = scratch_ptr + prog64 * CHUNK
        if PRE_CS:  # cs written by the preparation launch (scratch plane 3), the total its value at the last token
            total = tl.load(scratch + 3 * plane + length - 1)
            dt_b = tl.load(dt_base + tb * stride_dt_t, mask=mask_b, other=0.0).to(tl.float32)
            cs_b = tl.load(scratch + 3 * plane + tb)  # (every token of the row is written, padding included)
        else:
            a_chunk = tl.load(dt_base + offs_q * stride_dt_t, mask=offs_q < length, other=0.0).to(tl.float32) * A
            total = tl.sum(a_chunk, axis=0)
            dt_b, cs_b = _block_decays(dt_base, stride_dt_t, a_chunk, offs_q, t0, offs_t, length, A)
            if NEED_DA or NEED_DB or NEED_DC:  # for _tiles_bc_kernel: the same cs
                tl.store(scratch + 3 * plane + tb, cs_b, mask=mask_b)

        # the block's tokens as the earlier end j of the pairs, and their paths out of the chunk
        out_b = tl.exp(total - cs_b)
        x_b = _operand(tl.load(x_base + tb[:, None] * stride_x_t + offs_p[None, :] * stride_x_p, mask=mask_bp,
                               other=0.0))
        xf = x_b.to(tl.float32)
        # the pairs with j in this block: the S^T tiles of the chunk row's group from _tiles_s_kernel, pair (ib, jb)
        # at ib (ib + 1) / 2 + jb
        bracket = tl.zeros((T, BLOCK_P), dtype=tl.float32)
        s_pairs = s_ptr + ((rest.to(tl.int64) * (nheads // heads_per_group) + g64) * (N_BLK * (N_BLK + 1) // 2)
                           + blk) * (T * T)
        # (K_HALVES: the product in two parts over the i tokens, half of S^T's fp32 tile and of L live at a time)
        PARTS: tl.constexpr = 2 if PRE_CS and K_HALVES and T >= 32 else 1
        WIDTH: tl.constexpr = T // PARTS
        for i0 in range(t0, length, T):
            ib = i0 // T
            for part in tl.static_range(PARTS):
                cols = part * WIDTH + tl.arange(0, WIDTH)
                ti = i0 + cols
                mask_i = ti < length
                if PRE_CS:
                    cs_i = tl.load(scratch + 3 * plane + ti)
                else:
                    _, cs_i = _block_decays(dt_base, stride_dt_t, a_chunk, offs_q, i0, cols, length, A)
                dy_i = _operand(tl.load(dy_base + ti[:, None] * stride_dy_t + offs_p[None, :] * stride_dy_p,
                                        mask=mask_i[:, None] & mask_p[None, :], other=0.0))
                # [T (j), WIDTH (i)] of the pair's S^T tile
                st = tl.load(s_pairs + (ib * (ib + 1) // 2) * (T * T) + offs_t[:, None] * T + cols[None, :])
                lt = tl.exp(tl.where(ti[None, :] >= tb[:, None], cs_i[None, :] - cs_b[:, None], -float("inf")))
                if PAIR_MODE >= 0:
                    bracket = _mm_cl(st * lt, dy_i, bracket, PAIR_MODE, DOT_PRECISION)
                else:
                    bracket = _mm_cl(st * lt, dy_i, bracket, MODE, DOT_PRECISION, SPLIT_MASK & 4)
        # the paths out of the chunk, dstate in slices of NS (one [NS, P] slice of dH live at a time)
        state = tl.zeros((T, BLOCK_P), dtype=tl.float32)
        for n0 in tl.static_range(0, BLOCK_N, NS):
            offs_s = n0 + tl.arange(0, NS)
            mask_s = offs_s < dstate
            dH = tl.load(dstates_ptr + prog64 * (BLOCK_N * BLOCK_P) + offs_s[:, None] * BLOCK_P + offs_p[None, :])
            B_s = _operand(tl.load(B_base + tb[:, None] * stride_B_t + offs_s[None, :] * stride_B_n,
                                   mask=mask_b[:, None] & mask_s[None, :], other=0.0))
            state = _mm_cr(B_s, dH, state, MODE, DOT_PRECISION, SPLIT_MASK & 1)
            if NEED_DB and PATHS:
                dB_state = _mm_cr(x_b, tl.trans(dH), tl.zeros((T, NS), dtype=tl.float32), MODE, DOT_PRECISION,
                                  SPLIT_MASK & 2) * (out_b * dt_b * _unit(dunit_ptr, prog64, SCALED))[:, None]
                tl.atomic_add(dB_base + tb[:, None] * stride_dB_t + offs_s[None, :], dB_state,
                              mask=mask_b[:, None] & mask_s[None, :], sem="relaxed")
        state *= (out_b * _unit(dunit_ptr, prog64, SCALED))[:, None]
        edge = tl.sum(state * xf, axis=1) * dt_b
        bracket += state
        dy_b = _operand(tl.load(dy_base + tb[:, None] * stride_dy_t + offs_p[None, :] * stride_dy_p, mask=mask_bp,
                                other=0.0))
        if NEED_DX:
            dx = bracket * dt_b[:, None]
            if HAS_D:
                D = tl.load(D_ptr + h * stride_D_h + offs_p * stride_D_p, mask=mask_p, other=0.0).to(tl.float32)
                dx += dy_b.to(tl.float32) * D[None, :]
            tl.store(dx_ptr + ((b64 * seqlen + start) * nheads + h64) * headdim
                     + tb[:, None] * (nheads * headdim) + offs_p[None, :], dx.to(dx_ptr.dtype.element_ty),
                     mask=mask_bp)
        if NEED_DA:  # plane 0: bracket . x (before the paths in: bracket and x are not held through them)
            tl.store(scratch + tb, tl.sum(bracket * xf, axis=1), mask=mask_b)

        # the block's tokens as the later end i of the paths from before the chunk, dstate in slices as above
        if (NEED_DC or NEED_DA) and PATHS:
            inpath = tl.zeros((T,), dtype=tl.float32)
            carry = 0.0
            for n0 in tl.static_range(0, BLOCK_N, NS):
                offs_s = n0 + tl.arange(0, NS)
                mask_s = offs_s < dstate
                H = _stored_state(states_ptr + prog64 * (BLOCK_N * BLOCK_P) + offs_s[:, None] * BLOCK_P
                                  + offs_p[None, :], SCALED)
                if HAS_INIT and not SCALED:  # (scaled: the stored state is the initial one over its unit)
                    if k == 0:  # exact, whatever the states' dtype
                        H = tl.load(init_ptr + seq.to(tl.int64) * stride_init_s + h64 * stride_init_h
                                    + offs_p[None, :] * stride_init_p + offs_s[:, None] * stride_init_n,
                                    mask=mask_s[:, None] & mask_p[None, :], other=0.0).to(tl.float32)
                dC_state = _mm_cr(dy_b, tl.trans(H), tl.zeros((T, NS), dtype=tl.float32), MODE, DOT_PRECISION,
                                  SPLIT_MASK & 16) * (tl.exp(cs_b) * _unit(sunit_ptr, prog64, SCALED))[:, None]
                if NEED_DC:
                    tl.atomic_add(dC_base + tb[:, None] * stride_dB_t + offs_s[None, :], dC_state,
                                  mask=mask_b[:, None] & mask_s[None, :], sem="relaxed")
                if NEED_DA:
                    C_s = tl.load(C_base + tb[:, None] * stride_C_t + offs_s[None, :] * stride_C_n,
                                  mask=mask_b[:, None] & mask_s[None, :], other=0.0).to(tl.float32)
                    inpath += tl.sum(dC_state * C_s, axis=1)
                    if blk == 0:  # the paths from before the chunk to after it
                        dH = tl.load(dstates_ptr + prog64 * (BLOCK_N * BLOCK_P) + offs_s[:, None] * BLOCK_P
                                     + offs_p[None, :])
                        carry += tl.sum(tl.sum(dH.to(tl.float32) * H.to(tl.float32), axis=1), axis=0)
        if NEED_DA:
            tl.store(scratch + 2 * plane + tb, edge, mask=mask_b)  # plane 2: prefix-summed
            # plane 1: inpath, suffix-summed (with the pair sums, which the pair launch adds); zero here where the paths
            # launch adds its own (it may run after the pair launch)
            if PATHS:
                tl.store(scratch + plane + tb, inpath, mask=mask_b)
                if blk == 0:  # (unscaled: the dA launch scales it by exp(cs_L))
                    carry *= _unit(sunit_ptr, prog64, SCALED) * _unit(dunit_ptr, prog64, SCALED)
                    tl.store(carry_ptr + prog64 + offs_t * 0, carry + offs_t * 0.0, mask=offs_t == 0)
            else:
                tl.store(scratch + plane + tb, tl.zeros((T,), dtype=tl.float32), mask=mask_b)


@triton.jit
def _unit(unit_ptr, row, SCALED: tl.constexpr):
    """A stored tile's unit (scaled states: unit_ptr[row]), else 1."""
    if SCALED:
        unit = tl.load(unit_ptr + row)
    else:
        unit = 1.0
    return unit


@triton.jit
def _stored_state(at, SCALED: tl.constexpr):
    """A stored state tile as a product operand: as stored where it is scaled (fp16 over its unit, which the caller
    multiplies the product by), else widened to fp32."""
    if SCALED:
        H = tl.load(at)
    else:
        H = tl.load(at).to(tl.float32)
    return H


@triton.jit
def _sum_into(at, value, mask, slot, slot_elems, DET: tl.constexpr):
    """Adds value to the fp32 elements at `at` by relaxed atomics, or in the deterministic mode (DET) stores it to slot
    `slot` of a partial-sum buffer (slots `slot_elems` elements apart, one program a slot; the caller sums them in a
    fixed order)."""
    if DET:
        tl.store(at + slot.to(tl.int64) * slot_elems, value, mask=mask)
    else:
        tl.atomic_add(at, value, mask=mask, sem="relaxed")


@triton.jit
def _tiles_paths_kernel(
    x_ptr, dt_ptr, C_ptr, init_ptr, dy_ptr, states_ptr, dstates_ptr, dB_ptr, dC_ptr, scratch_ptr, carry_ptr,
    table_ptr, sunit_ptr, dunit_ptr, batch, seqlen, nheads, headdim, dstate, heads_per_group, ngroups,
    heads_per_prog, n_hblocks, plane,
    slot_elems,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_dy_b, stride_dy_t, stride_dy_h, stride_dy_p,
    stride_dB_b, stride_dB_t, stride_dB_g,
    stride_init_s, stride_init_h, stride_init_p, stride_init_n,
    CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_INIT: tl.constexpr, IS_VARLEN: tl.constexpr, DOT_PRECISION: tl.constexpr, MODE: tl.constexpr,
    SPLIT_MASK: tl.constexpr, NEED_DA: tl.constexpr, NEED_DB: tl.constexpr, NEED_DC: tl.constexpr,
    DET: tl.constexpr = False, SIDES: tl.constexpr = 2, CARRY: tl.constexpr = True, AHEAD: tl.constexpr = True,
    SCALED: tl.constexpr = False,
):
    """Program (chunk row, group, block b, block of heads, side): the block's paths out of the chunk (side 0) or into
    it from before (side 1), for each of the heads: dB's state part dt_j exp(cs_L - cs_j) x_j dH^T, or dC's
    exp(cs_i) dy_i H^T with the decay gradient's inpath C_i . (dC's state part) (scratch plane 1) and, for block 0
    (CARRY; else the state recompute wrote it), the carry <dH, H> (the dA launch scales it by exp(cs_L)). SIDES 2:
    both sides, side = the program's parity, before the pair launch; 0 or 1: that side alone (the launches before and
    after the state recompute, where H is stored over dH; side 1 then runs after the pair launch and adds its inpath
    terms to the pair sums there). Each head's product has a fresh accumulator, is scaled in fp32 (the scales are per
    token: no operand takes them exactly) and summed over the heads in registers; then one fp32 atomic an element
    for the block of heads (the tiles kernel's PATHS form adds one a head: at 8x4K of the 2.7B shape 2.7 GB of
    atomics through L2). The two sides are programs of their own, so that each holds one accumulator. cs as the tiles
    kernel left it in the scratch (no chunk-long reductions a head). DET (the deterministic mode): no atomics; the
    block of heads hb stores its sums into slot hb of dB's and dC's partial buffers (slots `slot_elems` apart), which
    the caller sums in a fixed order. AHEAD: each head's dt and cs are loaded during the head before it (plain loads,
    which the pipeline's stages do not cover). SCALED: the states and dH as _tiles_kernel's."""
    N_BLK: tl.constexpr = CHUNK // T
    pid = tl.program_id(0)
    if SIDES == 2:
        side = pid % 2
        rest = pid // 2
    else:
        side = SIDES
        rest = pid
    hb = rest % n_hblocks
    rest = rest // n_hblocks
    blk = rest % N_BLK
    rg = rest // N_BLK
    g = rg % ngroups
    rest = rg // ngroups
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    t0 = blk * T
    if t0 < length:
        offs_t = tl.arange(0, T)
        offs_p = tl.arange(0, BLOCK_P)
        offs_n = tl.arange(0, BLOCK_N)
        mask_p = offs_p < headdim
        mask_n = offs_n < dstate
        tb = t0 + offs_t
        mask_b = tb < length
        mask_bp = mask_b[:, None] & mask_p[None, :]
        mask_bn = mask_b[:, None] & mask_n[None, :]
        b64 = b.to(tl.int64)
        g64 = g.to(tl.int64)
        tile = offs_n[:, None] * BLOCK_P + offs_p[None, :]
        bc = b64 * stride_dB_b + g64 * stride_dB_g + (start + tb[:, None]) * stride_dB_t + offs_n[None, :]
        h_first = g * heads_per_group + hb * heads_per_prog
        n_h = tl.minimum(h_first + heads_per_prog, (g + 1) * heads_per_group) - h_first
        if side == 0:
            if NEED_DB:
                acc = tl.zeros((T, BLOCK_N), dtype=tl.float32)
                dt_n, cs_n, total_n = _paths_decays_of(dt_ptr, scratch_ptr, b64, h_first, rest, nheads, start,
                                                       stride_dt_b, stride_dt_t, stride_dt_h, tb, mask_b, length,
                                                       plane, CHUNK)
                for hh in range(0, n_h):
                    h64 = (h_first + hh).to(tl.int64)
                    prog64 = rest.to(tl.int64) * nheads + h64  # the (chunk row, head) row of dH, H and the scratch
                    dt_b, cs_b, total, dt_n, cs_n, total_n = _paths_decays_next(
                        dt_ptr, scratch_ptr, b64, h_first, hh, n_h, rest, nheads, start, stride_dt_b, stride_dt_t,
                        stride_dt_h, tb, mask_b, length, plane, dt_n, cs_n, total_n, CHUNK, AHEAD)
                    x_b = _operand(tl.load(x_ptr + b64 * stride_x_b + h64 * stride_x_h
                                           + (start + tb[:, None]) * stride_x_t + offs_p[None, :] * stride_x_p,
                                           mask=mask_bp, other=0.0))
                    dH = tl.load(dstates_ptr + prog64 * (BLOCK_N * BLOCK_P) + tile)
                    part = _mm_cr(x_b, tl.trans(dH), tl.zeros((T, BLOCK_N), dtype=tl.float32), MODE, DOT_PRECISION,
                                  SPLIT_MASK & 2)
                    acc += part * (tl.exp(total - cs_b) * dt_b * _unit(dunit_ptr, prog64, SCALED))[:, None]
                _sum_into(dB_ptr + bc, acc, mask_bn, hb, slot_elems, DET)
        else:
            if NEED_DC or NEED_DA:
                if NEED_DA:  # (in the input dtype: widened where used)
                    C_b = _operand(tl.load(C_ptr + b64 * stride_C_b + g64 * stride_C_g
                                           + (start + tb[:, None]) * stride_C_t + offs_n[None, :] * stride_C_n,
                                           mask=mask_bn, other=0.0))
                acc = tl.zeros((T, BLOCK_N), dtype=tl.float32)
                dt_n, cs_n, total_n = _paths_decays_of(dt_ptr, scratch_ptr, b64, h_first, rest, nheads, start,
                                                       stride_dt_b, stride_dt_t, stride_dt_h, tb, mask_b, length,
                                                       plane, CHUNK)
                for hh in range(0, n_h):
                    h64 = (h_first + hh).to(tl.int64)
                    prog64 = rest.to(tl.int64) * nheads + h64
                    dt_b, cs_b, total, dt_n, cs_n, total_n = _paths_decays_next(
                        dt_ptr, scratch_ptr, b64, h_first, hh, n_h, rest, nheads, start, stride_dt_b, stride_dt_t,
                        stride_dt_h, tb, mask_b, length, plane, dt_n, cs_n, total_n, CHUNK, AHEAD)
                    H = _stored_state(states_ptr + prog64 * (BLOCK_N * BLOCK_P) + tile, SCALED)
                    if HAS_INIT and not SCALED:  # (scaled: the stored state is the initial one over its unit)
                        if k == 0:  # exact, whatever the states' dtype
                            H = tl.load(init_ptr + seq.to(tl.int64) * stride_init_s + h64 * stride_init_h
                                        + offs_p[None, :] * stride_init_p + offs_n[:, None] * stride_init_n,
                                        mask=mask_n[:, None] & mask_p[None, :], other=0.0).to(tl.float32)
                    if NEED_DA and CARRY:
                        if blk == 0:  # the paths from before the chunk to after it
                            dH = tl.load(dstates_ptr + prog64 * (BLOCK_N * BLOCK_P) + tile).to(tl.float32)
                            carry = (tl.sum(tl.sum(dH * H.to(tl.float32), axis=1), axis=0)
                                     * _unit(sunit_ptr, prog64, SCALED) * _unit(dunit_ptr, prog64, SCALED))
                            tl.store(carry_ptr + prog64 + offs_t * 0, carry + offs_t * 0.0, mask=offs_t == 0)
                    dy_b = _operand(tl.load(dy_ptr + b64 * stride_dy_b + h64 * stride_dy_h
                                            + (start + tb[:, None]) * stride_dy_t + offs_p[None, :] * stride_dy_p,
                                            mask=mask_bp, other=0.0))
                    part = _mm_cr(dy_b, tl.trans(H), tl.zeros((T, BLOCK_N), dtype=tl.float32), MODE, DOT_PRECISION,
                                  SPLIT_MASK & 16) * (tl.exp(cs_b) * _unit(sunit_ptr, prog64, SCALED))[:, None]
                    acc += part
                    if NEED_DA:  # plane 1: inpath, suffix-summed (the pair launch adds its pair sums)
                        inpath = tl.sum(part * C_b.to(tl.float32), axis=1)
                        if SIDES == 1:  # (after the pair launch: added to its sums; this program's tokens alone)
                            inpath += tl.load(scratch_ptr + prog64 * CHUNK + plane + tb, mask=mask_b, other=0.0)
                        tl.store(scratch_ptr + prog64 * CHUNK + plane + tb, inpath, mask=mask_b)
                if NEED_DC:
                    _sum_into(dC_ptr + bc, acc, mask_bn, hb, slot_elems, DET)


@triton.jit
def _paths_decays(dt_ptr, scratch_ptr, b64, h64, prog64, start, stride_dt_b, stride_dt_t, stride_dt_h, tb, mask_b,
                  length, plane, CHUNK: tl.constexpr):
    """dt and cs of the block's tokens tb and the chunk's total decay, for one head: cs as the tiles kernel left it
    (scratch plane 3), the total as cs at the chunk's last token."""
    cs = scratch_ptr + prog64 * CHUNK + 3 * plane
    dt_b = tl.load(dt_ptr + b64 * stride_dt_b + h64 * stride_dt_h + (start + tb) * stride_dt_t, mask=mask_b,
                   other=0.0).to(tl.float32)
    return dt_b, tl.load(cs + tb, mask=mask_b, other=0.0), tl.load(cs + length - 1)


@triton.jit
def _paths_decays_of(dt_ptr, scratch_ptr, b64, h, rest, nheads, start, stride_dt_b, stride_dt_t, stride_dt_h, tb,
                     mask_b, length, plane, CHUNK: tl.constexpr):
    """_paths_decays of head h of the program's chunk row `rest`."""
    h64 = h.to(tl.int64)
    return _paths_decays(dt_ptr, scratch_ptr, b64, h64, rest.to(tl.int64) * nheads + h64, start, stride_dt_b,
                         stride_dt_t, stride_dt_h, tb, mask_b, length, plane, CHUNK)


@triton.jit
def _paths_decays_next(dt_ptr, scratch_ptr, b64, h_first, hh, n_h, rest, nheads, start, stride_dt_b, stride_dt_t,
                       stride_dt_h, tb, mask_b, length, plane, dt_n, cs_n, total_n, CHUNK: tl.constexpr,
                       AHEAD: tl.constexpr):
    """(dt, cs, total) of head h_first + hh, and what the next iteration takes for its own: with AHEAD, the values
    loaded an iteration earlier (dt_n, cs_n, total_n) and the next head's (the last head's again at the last), else
    the head's own loaded now and the given values passed on."""
    if AHEAD:
        dt_b, cs_b, total = dt_n, cs_n, total_n
        dt_n, cs_n, total_n = _paths_decays_of(dt_ptr, scratch_ptr, b64, h_first + tl.minimum(hh + 1, n_h - 1), rest,
                                               nheads, start, stride_dt_b, stride_dt_t, stride_dt_h, tb, mask_b,
                                               length, plane, CHUNK)
    else:
        dt_b, cs_b, total = _paths_decays_of(dt_ptr, scratch_ptr, b64, h_first + hh, rest, nheads, start,
                                             stride_dt_b, stride_dt_t, stride_dt_h, tb, mask_b, length, plane, CHUNK)
    return dt_b, cs_b, total, dt_n, cs_n, total_n


@triton.jit
def _lower_pair(pair, N_BLK: tl.constexpr):
    """Tile pair index -> (ib, jb), ib >= jb, the pairs numbered row by row of the lower triangle."""
    ib = 0
    for r in range(1, N_BLK):
        ib += (pair >= r * (r + 1) // 2).to(tl.int32)
    return ib, pair - ib * (ib + 1) // 2


@triton.jit
def _pair_tiles(B_ptr, C_ptr, b, g, start, length, ti, tj, dstate, stride_B_b, stride_B_t, stride_B_g, stride_B_n,
               stride_C_b, stride_C_t, stride_C_g, stride_C_n, BLOCK_N: tl.constexpr):
    """C at the chunk's tokens ti and B at tj ([T, BLOCK_N] product operands; 0 past the sequence and dstate)."""
    offs_n = tl.arange(0, BLOCK_N)
    mask_n = offs_n < dstate
    b64 = b.to(tl.int64)
    g64 = g.to(tl.int64)
    C_i = _operand(tl.load(C_ptr + b64 * stride_C_b + g64 * stride_C_g + (start + ti[:, None]) * stride_C_t
                           + offs_n[None, :] * stride_C_n, mask=(ti < length)[:, None] & mask_n[None, :], other=0.0))
    B_j = _operand(tl.load(B_ptr + b64 * stride_B_b + g64 * stride_B_g + (start + tj[:, None]) * stride_B_t
                           + offs_n[None, :] * stride_B_n, mask=(tj < length)[:, None] & mask_n[None, :], other=0.0))
    return C_i, B_j


@triton.jit
def _tiles_s_kernel(B_ptr, C_ptr, s_ptr, table_ptr, batch, seqlen, dstate, ngroups,
                    stride_B_b, stride_B_t, stride_B_g, stride_B_n, stride_C_b, stride_C_t, stride_C_g, stride_C_n,
                    CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_N: tl.constexpr, IS_VARLEN: tl.constexpr,
                    DOT_PRECISION: tl.constexpr):
    """Program (chunk row, group, tile pair i >= j): S^T = B_j . C_i as [T (j), T (i)] fp32, for the two launches after
    it: one product per pair for all the group's heads (the tiles kernel computed it per head: 8x4K of the 2.7B shape,
    2.27 -> 2.11 ms with this launch's 0.015). Tokens past the sequence give 0. (The chunk-parallel form's _cb_kernel
    stores C . B^T whole chunks at a time, (Q, Q), in the orientation its dx launch reads.)"""
    N_BLK: tl.constexpr = CHUNK // T
    N_PAIRS: tl.constexpr = N_BLK * (N_BLK + 1) // 2
    pid = tl.program_id(0)
    ib, jb = _lower_pair(pid % N_PAIRS, N_BLK)
    rg = pid // N_PAIRS
    g = rg % ngroups
    rest = rg // ngroups
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    offs_t = tl.arange(0, T)
    C_i, B_j = _pair_tiles(B_ptr, C_ptr, b, g, start, length, ib * T + offs_t, jb * T + offs_t, dstate,
                          stride_B_b, stride_B_t, stride_B_g, stride_B_n, stride_C_b, stride_C_t, stride_C_g,
                          stride_C_n, BLOCK_N)
    st = tl.dot(B_j, tl.trans(C_i), input_precision=DOT_PRECISION)
    tl.store(s_ptr + pid.to(tl.int64) * (T * T) + offs_t[:, None] * T + offs_t[None, :], st)


@triton.jit
def _tiles_bc_kernel(
    x_ptr, dt_ptr, B_ptr, C_ptr, dy_ptr, dB_ptr, dC_ptr, scratch_ptr, table_ptr, s_ptr, psum_ptr,
    batch, seqlen, nheads, dstate, headdim, heads_per_group, ngroups, heads_per_prog, n_hblocks, plane,
    slot_elems,
    stride_x_b, stride_x_t, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_t, stride_dt_h,
    stride_B_b, stride_B_t, stride_B_g, stride_B_n,
    stride_C_b, stride_C_t, stride_C_g, stride_C_n,
    stride_dy_b, stride_dy_t, stride_dy_h, stride_dy_p,
    stride_dB_b, stride_dB_t, stride_dB_g,
    CHUNK: tl.constexpr, T: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr, IS_VARLEN: tl.constexpr,
    DOT_PRECISION: tl.constexpr, MODE: tl.constexpr, SPLIT_MASK: tl.constexpr, NEED_DA: tl.constexpr,
    NEED_DB: tl.constexpr, NEED_DC: tl.constexpr, DET: tl.constexpr = False, COL_SUMS: tl.constexpr = True,
):
    """Program (chunk row, group, tile pair i >= j, block of heads): the pairs P_ij = (dy_i . x_j) S_ij L_ij dt_j.
    S_ij = C_i . B_j from _tiles_s_kernel; per head the decay gradient's row sums minus column sums of the same P tile
    (fp32 atomics into the suffix-summed plane), and the weights V_ij = sum_h (dy_i . x_j) L_ij dt_j summed over
    the heads first: dB_j += V^T C_i, dC_i += V B_j once for the block of heads, not once per head. cs comes from
    _tiles_kernel's scratch (the same bits as there). DET (the deterministic mode): no atomics, every sum goes to a slot
    of its own that one program writes, summed in a fixed order afterwards: the row sums to psum's slot jb, the
    column sums to slot ib + 1 (planes `plane` apart: a token of block t gets rows in slots 0..t and columns in
    t+1..N_BLK), dB_j to slot ib n_hblocks + hb of dB's partials and dC_i to slot jb n_hblocks + hb of dC's (slots
    `slot_elems` apart). COL_SUMS False: the row sums alone (the dA launch takes the column sums from the tiles
    kernel's bracket . x, `COLS_FROM_BRACKET`)."""
    N_BLK: tl.constexpr = CHUNK // T
    N_PAIRS: tl.constexpr = N_BLK * (N_BLK + 1) // 2
    pid = tl.program_id(0)
    hb = pid % n_hblocks
    rest = pid // n_hblocks
    pair = rest % N_PAIRS
    rg = rest // N_PAIRS
    g = rg % ngroups
    rest = rg // ngroups
    ib, jb = _lower_pair(pair, N_BLK)
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    if ib * T < length:
        offs_t = tl.arange(0, T)
        offs_p = tl.arange(0, BLOCK_P)
        offs_n = tl.arange(0, BLOCK_N)
        mask_p = offs_p < headdim
        mask_n = offs_n < dstate
        ti = ib * T + offs_t
        tj = jb * T + offs_t
        mask_i = ti < length
        mask_j = tj < length
        b64 = b.to(tl.int64)
        g64 = g.to(tl.int64)
        C_base = C_ptr + b64 * stride_C_b + g64 * stride_C_g + start * stride_C_t
        B_base = B_ptr + b64 * stride_B_b + g64 * stride_B_g + start * stride_B_t
        if NEED_DA:  # S [T (i), T (j)] from _tiles_s_kernel's S^T tile
            s = tl.trans(tl.load(s_ptr + ((rest.to(tl.int64) * ngroups + g64) * N_PAIRS + pair) * (T * T)
                                 + offs_t[:, None] * T + offs_t[None, :]))
        v = tl.zeros((T, T), dtype=tl.float32)
        h_first = g * heads_per_group + hb * heads_per_prog
        n_h = tl.minimum(h_first + heads_per_prog, (g + 1) * heads_per_group) - h_first
        dt_b = dt_ptr + b64 * stride_dt_b + start * stride_dt_t
        row_first = rest.to(tl.int64) * nheads + h_first
        # each head's decays and dt a head ahead (used at once, they were the largest stall of this loop)
        cs_i_next, cs_j_next, dt_j_next = _pair_decays(scratch_ptr, dt_b, row_first, h_first, ti, tj, mask_i,
                                                       mask_j, plane, stride_dt_t, stride_dt_h, CHUNK)
        for hh in range(0, n_h):
            h64 = (h_first + hh).to(tl.int64)
            scratch = scratch_ptr + (row_first + hh) * CHUNK
            cs_i, cs_j, dt_j = cs_i_next, cs_j_next, dt_j_next
            ahead = tl.minimum(hh + 1, n_h - 1)
            cs_i_next, cs_j_next, dt_j_next = _pair_decays(scratch_ptr, dt_b, row_first + ahead, h_first + ahead,
                                                           ti, tj, mask_i, mask_j, plane, stride_dt_t, stride_dt_h,
                                                           CHUNK)
            dy_h = dy_ptr + b64 * stride_dy_b + h64 * stride_dy_h + start * stride_dy_t  # (int32 offsets below)
            x_h = x_ptr + b64 * stride_x_b + h64 * stride_x_h + start * stride_x_t
            dy_i = _operand(tl.load(dy_h + ti[:, None] * stride_dy_t + offs_p[None, :] * stride_dy_p,
                                    mask=mask_i[:, None] & mask_p[None, :], other=0.0))
            x_j = _operand(tl.load(x_h + tj[:, None] * stride_x_t + offs_p[None, :] * stride_x_p,
                                   mask=mask_j[:, None] & mask_p[None, :], other=0.0))
            w = _pair_weights(dy_i, x_j, ti, tj, mask_i, mask_j, cs_i, cs_j, dt_j, MODE, DOT_PRECISION)
            v += w
            if NEED_DA:  # rows_i - cols_j, added to the suffix-summed terms (plane 1, _tiles_kernel's inpath)
                pairs = w * s
                if DET:
                    own = psum_ptr + (row_first + hh) * CHUNK
                    tl.store(own + jb.to(tl.int64) * plane + ti, tl.sum(pairs, axis=1), mask=mask_i)
                    if COL_SUMS:
                        tl.store(own + (ib + 1).to(tl.int64) * plane + tj, -tl.sum(pairs, axis=0), mask=mask_j)
                else:
                    tl.atomic_add(scratch + plane + ti, tl.sum(pairs, axis=1), mask=mask_i, sem="relaxed")
                    if COL_SUMS:
                        tl.atomic_add(scratch + plane + tj, -tl.sum(pairs, axis=0), mask=mask_j, sem="relaxed")
        if NEED_DB:
            mask_in = mask_i[:, None] & mask_n[None, :]
            C_i = _operand(tl.load(C_base + ti[:, None] * stride_C_t + offs_n[None, :] * stride_C_n, mask=mask_in,
                                   other=0.0))
            dB = _mm_cl(tl.trans(v), C_i, tl.zeros((T, BLOCK_N), dtype=tl.float32), MODE, DOT_PRECISION,
                        SPLIT_MASK & 8)
            dB_at = (dB_ptr + b64 * stride_dB_b + g64 * stride_dB_g + start * stride_dB_t + tj[:, None] * stride_dB_t
                     + offs_n[None, :])
            _sum_into(dB_at, dB, mask_j[:, None] & mask_n[None, :], ib * n_hblocks + hb, slot_elems, DET)
        if NEED_DC:
            mask_jn = mask_j[:, None] & mask_n[None, :]
            B_j = _operand(tl.load(B_base + tj[:, None] * stride_B_t + offs_n[None, :] * stride_B_n, mask=mask_jn,
                                   other=0.0))
            dC = _mm_cl(v, B_j, tl.zeros((T, BLOCK_N), dtype=tl.float32), MODE, DOT_PRECISION, SPLIT_MASK & 32)
            dC_at = (dC_ptr + b64 * stride_dB_b + g64 * stride_dB_g + start * stride_dB_t + ti[:, None] * stride_dB_t
                     + offs_n[None, :])
            _sum_into(dC_at, dC, mask_i[:, None] & mask_n[None, :], jb * n_hblocks + hb, slot_elems, DET)


@triton.jit
def _pair_weights(dy_i, x_j, ti, tj, mask_i, mask_j, cs_i, cs_j, dt_j, MODE: tl.constexpr,
                  DOT_PRECISION: tl.constexpr):
    """One head's pair weights (dy_i . x_j) L_ij dt_j ([len(ti), len(tj)] fp32, 0 outside i >= j and the chunk). L by
    `fast_exp` (the MUFU alone): the pair launch 0.415 -> 0.369 ms at 8x4K of the 2.7B shape on an H200. The tiles
    kernel's L stays on tl.exp: with fast_exp it lost its spills and 8 % of its instructions and ran 1.3 % slower
    (benchmarks/notes/ssd_backward.md, sixty-third session)."""
    inside = (ti[:, None] >= tj[None, :]) & mask_i[:, None] & mask_j[None, :]  # (not held through the heads' loop)
    return (_mm_vv(dy_i, tl.trans(x_j), MODE, DOT_PRECISION)
            * fast_exp(tl.where(inside, cs_i[:, None] - cs_j[None, :], -float("inf"))) * dt_j[None, :])


@triton.jit
def _pair_decays(scratch_ptr, dt_b, row, h, ti, tj, mask_i, mask_j, plane, stride_dt_t, stride_dt_h,
                 CHUNK: tl.constexpr):
    """cs of the tokens ti and tj (_tiles_kernel's, scratch plane 3) and dt of tj, for chunk-row-and-head row."""
    cs = scratch_ptr + row * CHUNK + 3 * plane
    return (tl.load(cs + ti, mask=mask_i, other=0.0), tl.load(cs + tj, mask=mask_j, other=0.0),
            tl.load(dt_b + h.to(tl.int64) * stride_dt_h + tj * stride_dt_t, mask=mask_j, other=0.0).to(tl.float32))


@triton.jit
def _tiles_da_kernel(dt_ptr, A_ptr, scratch_ptr, carry_ptr, ddt_ptr, part_ptr, table_ptr, psum_ptr, raw_ptr,
                     bias_ptr, batch, seqlen, nheads, plane, n_hblocks, stride_dt_b, stride_dt_t, stride_dt_h,
                     stride_raw_b, stride_raw_t, stride_raw_h, dt_lo, dt_hi,
                     CHUNK: tl.constexpr, BLOCK_H: tl.constexpr, IS_VARLEN: tl.constexpr, NEED_DDT: tl.constexpr,
                     PAIR_SLOTS: tl.constexpr = 0, COLS_FROM_BRACKET: tl.constexpr = False,
                     HAS_DT_BIAS: tl.constexpr = False, DT_SOFTPLUS: tl.constexpr = False,
                     BIAS_SUM: tl.constexpr = False):
    """Per (chunk, block of BLOCK_H heads): the decay gradient da_k from the tiles' per-token terms, ddt = bracket . x
    + A da, and each head's share of dA, sum dt da (to part's first plane). A block of heads, so that dt and ddt, whose
    heads are contiguous, move in whole sectors (one head a program read and wrote 4 bytes of each).
    ddt is taken on to the raw dt (raw_ptr, with dt_bias, softplus and the clamp to [dt_lo, dt_hi], as
    `process_dt_grad`) before it is stored, in place of a launch of its own after this one. BIAS_SUM: each head's
    share of dt_bias's gradient, the sum of those ddt (to part's second plane; NEED_DDT may be off then: ddt itself is
    not stored).
    PAIR_SLOTS (the deterministic mode): the pair launch's row and column sums from psum's slots, added to plane 1 in
    slot order. COLS_FROM_BRACKET: plane 1 has no column sums; with cols_j = dt_j bracket_j . x_j - edge_j,
    da_k = exp(cs_L) <dH, H> + sum_j edge_j + sum_{i >= k} (inpath_i + rows_i - dt_i bracket_i . x_i)."""
    pid = tl.program_id(0)
    hb = pid % n_hblocks
    rest = pid // n_hblocks
    b, seq, k, start, length, n_chunks, lane = chunk_of(rest, table_ptr, batch, seqlen, CHUNK, IS_VARLEN)
    offs_h = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_q = tl.arange(0, CHUNK)
    mask_h = offs_h < nheads
    mask = mask_h[:, None] & (offs_q < length)[None, :]
    h64 = offs_h.to(tl.int64)
    prog = rest.to(tl.int64) * nheads + h64  # [BLOCK_H] (chunk row, head)
    at = prog[:, None] * CHUNK + offs_q[None, :]
    direct = tl.load(scratch_ptr + at, mask=mask, other=0.0)
    later = tl.load(scratch_ptr + plane + at, mask=mask, other=0.0)
    for slot in tl.static_range(PAIR_SLOTS):
        later += tl.load(psum_ptr + plane.to(tl.int64) * slot + at, mask=mask, other=0.0)
    edge = tl.load(scratch_ptr + 2 * plane + at, mask=mask, other=0.0)
    # the paths over the whole chunk, exp(cs_L) <dH, H> (cs_L: the chunk's total decay, scratch plane 3)
    carry = tl.load(carry_ptr + prog, mask=mask_h, other=0.0) * tl.exp(
        tl.load(scratch_ptr + prog * CHUNK + 3 * plane + tl.maximum(length - 1, 0), mask=mask_h, other=0.0))
    dt = tl.load(dt_ptr + b.to(tl.int64) * stride_dt_b + h64[:, None] * stride_dt_h
                 + (start + offs_q[None, :]) * stride_dt_t, mask=mask, other=0.0).to(tl.float32)
    if COLS_FROM_BRACKET:
        later -= dt * direct
        da = (carry + tl.sum(edge, axis=1))[:, None] + (tl.sum(later, axis=1)[:, None] - tl.cumsum(later, axis=1)
                                                       + later)
    else:
        da = carry[:, None] + (tl.cumsum(edge, axis=1) - edge) + (tl.sum(later, axis=1)[:, None]
                                                                 - tl.cumsum(later, axis=1) + later)
    da = tl.where(mask, da, 0.0)
    if NEED_DDT or BIAS_SUM:
        A = tl.load(A_ptr + offs_h, mask=mask_h, other=0.0).to(tl.float32)
        raw = tl.load(raw_ptr + b.to(tl.int64) * stride_raw_b + h64[:, None] * stride_raw_h
                      + (start + offs_q[None, :]) * stride_raw_t, mask=mask, other=0.0).to(tl.float32)
        bias = tl.zeros([BLOCK_H], dtype=tl.float32)
        if HAS_DT_BIAS:
            bias = tl.load(bias_ptr + offs_h, mask=mask_h, other=0.0).to(tl.float32)
        ddt = tl.where(mask, process_dt_grad(direct + A[:, None] * da, raw, bias[:, None], dt_lo, dt_hi, HAS_DT_BIAS,
                                             DT_SOFTPLUS), 0.0)
        if NEED_DDT:
            tl.store(ddt_ptr + (b.to(tl.int64) * seqlen + start + offs_q[None, :]) * nheads + h64[:, None], ddt,
                     mask=mask)
        if BIAS_SUM:
            tl.store(part_ptr + plane // CHUNK + prog, tl.sum(ddt, axis=1), mask=mask_h)  # (planes of rows x heads)
    tl.store(part_ptr + prog, tl.sum(da * dt, axis=1), mask=mask_h)


# The most heads a program of `_tiles_da_kernel` takes (tests set fewer, so that small shapes have several blocks), and
# its warps. H200, 8x4K of the 2.7B shape (the backward's chunks of 128), the launch's time: 16 heads 27.7 us, 8 heads
# 22.0 (with dt_bias and softplus 33.3 and 26.2), 4 heads 29.1; at 1x32K (chunks of 256) 8 heads 33.1 us, 4 heads 32.4;
# 8 warps -5 %, 2 warps +18-36 % (notes/ssd_backward.md, sixty-fourth session).
DA_HEADS = 8
DA_WARPS = 4


def da_heads(chunk: int, nheads: int) -> int:
    """Heads a program of `_tiles_da_kernel`: DA_HEADS, fewer where the heads are fewer (their power of two) or the
    chunk is longer than 256 tokens (about 2048 tokens' terms a program at most)."""
    return max(1, min(DA_HEADS, 2048 // chunk, triton.next_power_of_2(nheads)))


# cs from the preparation launch rather than computed in each tiles program (False: the in-kernel form, for A/B)
PRE_CS = True
TILE = 64  # tokens a block (chunk 256: four blocks a chunk)
TILES_WARPS, TILES_STAGES = 4, 1
# The tiles kernel's pair products (S^T L) dy_i in two halves of the i tokens (tiles of 32 tokens and more): half of the
# fp32 S^T tile and of L live at a time. Offline (sm_90, triton 3.6, the 128 cap) 48 -> 12 B spilled; H100, 2.7B shape,
# backward alone: the kernel 0.795 -> 0.693 ms at 8x4K, 8x4K 2.980 -> 2.869, 32x2K 5.738 -> 5.538, 1x32K 3.612 -> 3.491,
# the same gradients (notes/ssd_backward.md, twenty-fifth session). False: whole (A/B).
TILES_K_HALVES = True
TILES_BC_WARPS, TILES_BC_STAGES = 4, 2
# The pair launch's stages where its tiles are at most 64 x 128 and the inputs 16-bit (50 KB of shared memory, two
# programs an SM): with the row sums alone (COLS_FROM_BRACKET) three stages took it 0.485 -> 0.414 ms at 8x4K of the
# 2.7B shape on an H200, 0.772 -> 0.660 at 1x32K (backward -2.8 % and -3.4 %; twenty-sixth session). Elsewhere
# TILES_BC_STAGES (larger or fp32 tiles: untimed, and three stages of them would take 100-200 KB).
TILES_BC_STAGES_NARROW = 3
# Where the tiles are at most 64 x 128 (headdim <= 64, dstate <= 128), register caps: the tiles kernel at 168
# registers (three programs an SM instead of two; 112 B spilled offline), the pair launch with 8 warps at 128 (two
# programs an SM instead of one; 140 B). H100, 2.7B shape, bf16, backward alone: 8x4K 4.57 -> 4.10 ms, 1x32K 4.65 ->
# 4.20 (tiles kernel 2.64 -> 2.19, pair launch 1.02 -> 0.95; notes/ssd_backward.md, thirteenth session). Without its
# state paths (the paths launch takes them) the tiles kernel is capped at 128 (four programs an SM; 140 B spilled,
# 216 registers uncapped): 8x4K 1.125 -> 1.046 ms against 168 (fourteenth session).
TILES_MAXNREG, TILES_MAXNREG_NO_PATHS, TILES_BC_CAPPED = 168, 128, (8, 128)
# The paths launch (_tiles_paths_kernel) where the tiles are at most 64 x 128: 8 warps, registers left to ptxas (one
# program an SM), two stages (the next head's tiles load during this head's product), blocks of 128 tokens (H and dH
# loaded half as often as in blocks of 64), 20 heads a program at most. H100, 2.7B shape, 8x4K: the launch takes 0.73
# ms and the tiles kernel 2.11 -> 1.05 ms; blocks of 64 capped at 128 registers (two programs an SM, offline 240 B
# spilled) 0.78, with 80 heads a program 0.89, one stage 1.02; the scales folded into split operands instead of a
# fresh product a head 0.83 (blocks of 128) and 1.72 (64) (fourteenth session). Three stages with 16-bit inputs (96 KB
# of shared memory; fp32 inputs keep two, 128 KB): the launch 0.843 -> 0.750 ms at 8x4K with the backward's chunks of
# 128, 0.745 -> 0.614 at 1x32K (chunks of 256; it was 0.79 against 0.78 when chosen; twenty-fifth session).
PATHS_WARPS, PATHS_MAXNREG, PATHS_STAGES, PATHS_HEADS, PATHS_TILE = 8, None, 3, 20, 128
PATHS_STAGES_FP32 = 2
# Three stages of 16-bit tiles take ~96 KB of shared memory on sm_90 but 128 KB on sm_80 and sm_89 (64 KB at two;
# `benchmarks/other_gpus.py`, eighty-second session): where a block may have less than this, two stages, chosen
# before the launch so that torch.compile's path (Triton's own launch, which `_runtime.cached_launch`'s stage fallback
# does not reach) gets them too
PATHS_THREE_STAGES_FROM = 128 * 1024
# The paths launch loads each head's dt and cs during the head before it (notes/ssd_backward.md, thirty-fifth
# session). False: each head's own at its start (A/B).
PATHS_AHEAD = True
# The decay gradient's column sums of the pairs, cols_j = sum_i P_ij, from the tiles kernel: dt_j bracket_j . x_j is
# cols_j + edge_j, and both bracket . x and edge are there already; the pair launch then sums rows only (one cross-warp
# sum and one atomic a head and tile pair instead of two). The rows and columns must sum the same pairs to cancel in
# the chunk's total: the tiles kernel's pair products split where they would round (16-bit inputs). Measured in
# notes/ssd_backward.md, twenty-sixth session. False: both sums in the pair launch (A/B).
COLS_FROM_BRACKET = True


def _small_tiles(block_n: int, block_p: int) -> bool:
    """Tiles of at most 64 x 128 (headdim <= 64, dstate <= 128): the sizes the launches' configurations were measured
    at (the 2.7B shape's)."""
    return block_n <= 128 and block_p <= 64


def paths_launch(block_n: int, block_p: int) -> bool:
    """Whether the block's state paths (dB's and dC's state parts, inpath, carry) run as a launch of their own,
    summed over heads before their atomics, rather than in the tiles kernel: where its [T, BLOCK_N] accumulators fit
    (what was measured)."""
    return _small_tiles(block_n, block_p)


def register_caps(block_n: int, block_p: int, paths: bool) -> tuple[int | None, int, int | None]:
    """(the tiles kernel's register cap, the pair launch's warps and register cap) for these tiles, with the state
    paths in a launch of their own or not; a cap of None leaves the registers to ptxas."""
    if _small_tiles(block_n, block_p):
        return (TILES_MAXNREG_NO_PATHS if paths else TILES_MAXNREG, *TILES_BC_CAPPED)
    return None, TILES_BC_WARPS, None


def paths_stages(element_size: int, device) -> int:
    """The paths launch's pipeline stages for this input width on this device (`PATHS_THREE_STAGES_FROM`)."""
    if element_size > 2:
        return PATHS_STAGES_FP32
    if _runtime.shared_memory(device, on_cpu=PATHS_THREE_STAGES_FROM) < PATHS_THREE_STAGES_FROM:
        return min(PATHS_STAGES, 2)
    return PATHS_STAGES


def pair_stages(block_n: int, block_p: int, element_size: int) -> int:
    """The pair launch's pipeline stages for these tiles and input width."""
    return TILES_BC_STAGES_NARROW if _small_tiles(block_n, block_p) and element_size <= 2 else TILES_BC_STAGES


__all__ = ["TILE", "TILES_SPLIT_ALL", "TILES_SPLIT_DEFAULT", "pair_stages", "paths_launch", "paths_stages",
           "register_caps"]
