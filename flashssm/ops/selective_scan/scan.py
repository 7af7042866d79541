"""selective_scan: Mamba-1's scan as fused Triton kernels, forward in one launch, backward in one.

Per channel d and state n the scan is a first-order linear recurrence,

    h_t = a_t h_{t-1} + b_t,   a_t = exp(delta_t A_dn),   b_t = delta_t u_t B_tn,

with y_t = <h_t, C_t> (+ D u_t, gated by silu(z_t)).

Forward: one program per (block of channels, batch row[, segment]) walks the sequence, token after
token, with every state of a channel in registers (split over a few lanes where the grid would
otherwise be too small): per (state, token) one exp2 and three multiply-adds, no scan primitive.
u, delta, z and y move as 16-byte vectors of 8 tokens per thread, split into columns in
registers; B and C are first rewritten by a small launch as zero-padded fp32 tiles, read at fixed
offsets. States never reach device memory, except the state entering every chunk-th token (32) when a
backward will follow (its memory is the states' divided by the chunk: O(inputs)).

Backward: the same layout run backwards. One program per (block of channels, batch row) walks the
sequence from its end, one chunk (the spacing of the stored states) at a time: pass 1 recomputes the
state entering every tile of the chunk into a small per-program scratch (L1/L2), pass 2 takes the
tiles in reverse, recomputes each tile's states per slot in registers and runs the gradient
backwards through them (dh_t = r + C_t dy_t, r <- a_t dh_t). du, ddelta, dz and dA stay per channel;
dB and dC are summed over the block's channels and added by fp32 atomics (one slice per block in
deterministic mode).

Segments: where the channels alone leave the GPU short of warps (batch 1), both kernels cut the
sequence into segments, one program each. A program first sums what its segment contributes to the
state leaving it (forward) or to the gradient reaching the state entering it (backward), then takes
the value handed on by its neighbour (the previous segment forward, the next backward: an earlier
ticket), hands on its own at once (one multiply-add per state), and only then runs its main pass.

Varlen (cu_seqlens, batch 1): a per-token sequence index; the decay at a sequence's first token is
0, so no state and no gradient crosses a boundary.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.checks import check_register_cap
from flashssm.ops.triton_common import columns, join_columns, prefetch, process_delta, silu, silu_grad, take_ticket

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _fast_silu(z, FAST: tl.constexpr):
    """silu with exp2 and an approximate division on the GPU (the exact division branches)."""
    if FAST:
        return tl.fdiv(z, 1.0 + tl.exp2(-z * LOG2E), ieee_rounding=False)
    return silu(z)


@triton.jit
def _cols3(x, R0: tl.constexpr, R1: tl.constexpr, Q: tl.constexpr):
    """The Q columns of an [R0, R1, Q] tile held in one thread's registers along Q (free splits)."""
    if Q == 1:
        return (tl.reshape(x, (R0, R1)),)
    elif Q == 2:
        return tl.split(x)
    elif Q == 4:
        e, o = tl.split(tl.reshape(x, (R0, R1, 2, 2)))
        c0, c2 = tl.split(e)
        c1, c3 = tl.split(o)
        return c0, c1, c2, c3
    else:
        e, o = tl.split(tl.reshape(x, (R0, R1, 4, 2)))  # even, odd columns
        c0, c2, c4, c6 = _cols3(e, R0, R1, 4)
        c1, c3, c5, c7 = _cols3(o, R0, R1, 4)
        return c0, c1, c2, c3, c4, c5, c6, c7


@triton.jit
def _row_values(p, NL: tl.constexpr, BLOCK_D: tl.constexpr, T: tl.constexpr):
    """p: [NL, BLOCK_D] pointers to rows of T contiguous floats (16-bit ones: B and C as the inputs gave them); the T
    values as [NL, BLOCK_D] tensors, loaded 16 bytes at a time (one vector per thread; the lanes of one row read one
    address), 16-bit values widened to fp32 (exact)."""
    W: tl.constexpr = p.dtype.element_ty.primitive_bitwidth
    Q: tl.constexpr = 8 if W == 16 and T >= 8 else (4 if T >= 4 else T)
    out = ()
    for q in tl.static_range(T // Q):
        v = tl.load(p[:, :, None] + (q * Q + tl.arange(0, Q))[None, None, :])
        if W == 16:
            v = v.to(tl.float32)
        out = out + _cols3(v, NL, BLOCK_D, Q)
    return out


@triton.jit
def _slot_rows(p_bc, rows, j: tl.constexpr, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr,
               TILE: tl.constexpr, WANT_B: tl.constexpr, WANT_C: tl.constexpr):
    """Slot j's TILE values of B and of C in the tile at p_bc (each a tuple of [NL, BLOCK_D]; () if not wanted)."""
    b = ()
    c = ()
    if WANT_B:
        b = _row_values(p_bc + rows[j] * TILE, NL, BLOCK_D, TILE)
    if WANT_C:
        c = _row_values(p_bc + (SLOTS * NL + rows[j]) * TILE, NL, BLOCK_D, TILE)
    return b, c


@triton.jit
def _bc_tile(p_bc, rows, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr):
    """One tile of the pre-tiled B and C: per slot, the TILE values of B and of C as [NL, BLOCK_D]."""
    bs = ()
    cs = ()
    for j in tl.static_range(SLOTS):
        b, c = _slot_rows(p_bc, rows, j, NL, BLOCK_D, SLOTS, TILE, True, True)
        bs = bs + (b,)
        cs = cs + (c,)
    return bs, cs


@triton.jit
def _slot_first(p_bc, rows, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr,
                WANT_C: tl.constexpr, AHEAD: tl.constexpr):
    """What `_slot_step` takes for slot 0: with AHEAD its rows of B (and C), issued before any slot's arithmetic."""
    first = ((), ())
    if AHEAD:
        first = _slot_rows(p_bc, rows, 0, NL, BLOCK_D, SLOTS, TILE, True, WANT_C)
    return first


@triton.jit
def _slot_step(p_bc, rows, j: tl.constexpr, ahead, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr,
               TILE: tl.constexpr, WANT_C: tl.constexpr, AHEAD: tl.constexpr):
    """Slot j's rows of B (and of C with WANT_C) in the tile at p_bc, and what slot j + 1 takes. AHEAD: `ahead`
    holds slot j's rows, issued a slot earlier, and slot j + 1's are issued now, so that they load while slot j's
    arithmetic runs; otherwise slot j's rows are loaded here."""
    if AHEAD:
        cur = ahead
        if j + 1 < SLOTS:
            ahead = _slot_rows(p_bc, rows, j + 1, NL, BLOCK_D, SLOTS, TILE, True, WANT_C)
    else:
        cur = _slot_rows(p_bc, rows, j, NL, BLOCK_D, SLOTS, TILE, True, WANT_C)
    return cur, ahead


@triton.jit
def _state_pos(n, CK: tl.constexpr, CK_RUN: tl.constexpr):
    """Where state n lies in a row of the backward's stored states (`ckpt_layout`): CK runs of CK_RUN states, run r
    holding the states n = r (mod CK), so that each of the backward's CK lanes finds its states together."""
    pos = n
    if CK > 1:
        pos = (n % CK) * CK_RUN + n // CK
    return pos


@triton.jit
def _store_states(p, rows, values, mask_d, dstate, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr,
                  CK: tl.constexpr, CK_RUN: tl.constexpr):
    """Store the states `values` (per slot, [NL, BLOCK_D]) at p + position of n ([1, BLOCK_D] pointers to the
    channels' rows of dstate values) where n < dstate and mask_d; positions as `_state_pos` (CK 1: n itself).
    Where four of a thread's slots lie at consecutive positions they go as one 16-byte vector, whole sectors (slot
    by slot, a warp's store writes 4 or 8 bytes into each of 16-32 sectors): with the natural order that is one
    lane a channel; with runs of CK_RUN (a multiple of 4) it is every NL dividing CK, the slots j = r + m * STEP
    of a thread (STEP = CK / NL) lying at consecutive positions as m goes."""
    STEP: tl.constexpr = (1 if NL == 1 else 0) if CK == 1 else (CK // NL if CK % NL == 0 else 0)
    RUN: tl.constexpr = SLOTS if CK == 1 else CK_RUN
    GROUP: tl.constexpr = 4 if STEP > 0 and RUN % 4 == 0 and SLOTS == STEP * RUN else 1
    if GROUP == 1:
        for j in tl.static_range(SLOTS):
            tl.store(p + _state_pos(rows[j], CK, CK_RUN), values[j], mask=(rows[j] < dstate) & mask_d[None, :])
    else:
        for r in tl.static_range(STEP):
            for q in tl.static_range(RUN // GROUP):
                # the group's first position, written so that the compiler sees a multiple of 4 (rows[0] is the
                # lane; (n % CK) * CK_RUN + n // CK for n = (r + q * GROUP * STEP) * NL + lane)
                if CK == 1:
                    first = rows[q * GROUP]
                else:
                    first = (r * NL + rows[0]) * CK_RUN + q * GROUP
                off = first[:, :, None] + tl.arange(0, GROUP)[None, None, :]
                grp = _join2((values[r + q * GROUP * STEP], values[r + (q * GROUP + 1) * STEP],
                              values[r + (q * GROUP + 2) * STEP], values[r + (q * GROUP + 3) * STEP]),
                             NL, BLOCK_D, GROUP)
                tl.store(p[:, :, None] + off, grp, mask=(off < dstate) & mask_d[None, :, None])


@triton.jit
def _prefetch_values(p, N: tl.constexpr, NL: tl.constexpr, BLOCK_D: tl.constexpr):
    """The 128-byte lines holding the N values from p (tiles of B and C, fp32 or 16-bit) into L1, the program's
    [NL, BLOCK_D] threads taking the lines in turn."""
    EB: tl.constexpr = p.dtype.element_ty.primitive_bitwidth // 8
    LINES: tl.constexpr = (N * EB + 127) // 128
    o_line = (tl.arange(0, NL)[:, None] * BLOCK_D + tl.arange(0, BLOCK_D)[None, :]) % LINES
    prefetch(p + o_line * (128 // EB), "L1")


@triton.jit
def _tokens(seq_ptr, t0, seqlen, ACC: tl.constexpr, TILE: tl.constexpr):
    """Varlen, per token of the tile starting at t0: keep the state (0 where the token starts a
    sequence), ends a sequence, its sequence index (int64)."""
    # (a tensor mask: t0 may be an int; a tile past the sequence's end, in its last chunk, reads nothing)
    s_prev = tl.load(seq_ptr + t0 - 1, mask=(t0 - 1 >= seqlen * 0) & (t0 - 1 < seqlen), other=-1)
    keeps = ()
    ends = ()
    seqs = ()
    for k in tl.static_range(TILE):
        s_k = tl.load(seq_ptr + t0 + k, mask=t0 + k < seqlen, other=-1)
        s_n = tl.load(seq_ptr + t0 + k + 1, mask=t0 + k + 1 < seqlen, other=-1)
        keeps = keeps + ((s_k == s_prev).to(ACC),)
        ends = ends + (s_n != s_k,)  # past seqlen both are -1
        seqs = seqs + (s_k.to(tl.int64),)
        s_prev = s_k
    return keeps, ends, seqs


@triton.jit
def _join2(c, R0: tl.constexpr, R1: tl.constexpr, T: tl.constexpr):
    """A tuple of T [R0, R1] tensors as an [R0, R1, T] tile (the inverse of `_cols3`-like splits)."""
    if T == 1:
        return tl.reshape(c[0], (R0, R1, 1))
    elif T == 2:
        return tl.join(c[0], c[1])
    elif T == 4:
        return tl.reshape(tl.join(tl.join(c[0], c[2]), tl.join(c[1], c[3])), (R0, R1, 4))
    else:
        e = _join2((c[0], c[2], c[4], c[6]), R0, R1, 4)
        o = _join2((c[1], c[3], c[5], c[7]), R0, R1, 4)
        return tl.reshape(tl.join(e, o), (R0, R1, 8))


@triton.jit
def _bc_tiles_kernel(B_ptr, C_ptr, out_ptr, dstate, seqlen, ngroups, n_tiles,
                     stride_B_b, stride_B_g, stride_B_n, stride_B_l,
                     stride_C_b, stride_C_g, stride_C_n, stride_C_l,
                     NPAD: tl.constexpr, BLOCK_N: tl.constexpr, TILE: tl.constexpr, BLOCK_L: tl.constexpr):
    """B and C, (batch, ngroups, dstate, seqlen), as the scan reads them: tiles of TILE tokens in out's dtype (fp32, or
    the inputs' own 16-bit dtype for the forward: `BC_INPUT_DTYPE`),
    (batch, ngroups, n_tiles, 2, NPAD, TILE) with B then C, zero past dstate and seqlen, so that one
    base pointer per tile and fixed offsets reach every value, without masks."""
    i_l = tl.program_id(0)
    i_bg = tl.program_id(1)
    i_b = (i_bg // ngroups).to(tl.int64)
    i_g = (i_bg % ngroups).to(tl.int64)
    o_n = tl.arange(0, BLOCK_N)
    o_l = i_l * BLOCK_L + tl.arange(0, BLOCK_L)
    m = (o_n < dstate)[:, None] & (o_l < seqlen)[None, :]
    Bv = tl.load(B_ptr + i_b * stride_B_b + i_g * stride_B_g + o_n[:, None] * stride_B_n + o_l[None, :] * stride_B_l,
                 mask=m, other=0.0)
    Cv = tl.load(C_ptr + i_b * stride_C_b + i_g * stride_C_g + o_n[:, None] * stride_C_n + o_l[None, :] * stride_C_l,
                 mask=m, other=0.0)
    tile = (o_l // TILE).to(tl.int64)
    off = ((i_bg * n_tiles + tile[None, :]) * 2) * NPAD * TILE + o_n[:, None] * TILE + (o_l % TILE)[None, :]
    m_out = (o_n < NPAD)[:, None] & (o_l < n_tiles * TILE)[None, :]
    tl.store(out_ptr + off, Bv.to(out_ptr.dtype.element_ty), mask=m_out)
    tl.store(out_ptr + off + NPAD * TILE, Cv.to(out_ptr.dtype.element_ty), mask=m_out)


@triton.jit
def _dlast_at(dlast_ptr, seq, ends, state_size, dstate, o_d, m_d, row, ACC: tl.constexpr):
    """Varlen: the last-state gradient of sequence `seq` for the states `row` ([NL, 1]) of the block's
    channels where the token ends its sequence (`ends`), else 0."""
    # (the interpreter turns a scalar bool & a bool tensor into int32: multiply)
    m_end = ((row < dstate) & m_d[None, :]).to(tl.int32) * ends.to(tl.int32) != 0
    return tl.load(dlast_ptr + seq * state_size + o_d[None, :] * dstate + row, mask=m_end, other=0.0).to(ACC)


@triton.jit
def _row_offset(i_b, o_d, stride_b, stride_d, ALIGN: tl.constexpr):
    """The offsets of the block's channels' rows in a (batch, dim, seqlen) tensor, [BLOCK_D, 1]. ALIGN: every row's
    offset is a multiple of it (the caller's promise, `row_align`): the JIT marks a stride only when it is a multiple
    of 16, so without this a row length of 2040 would cost the tiles their vector loads and stores. (Marked as
    [BLOCK_D] and then expanded: Triton's coalescing pass asserts on a multiple_of over a [1, 1] tensor, BLOCK_D 1.)"""
    off = i_b * stride_b + o_d * stride_d
    if ALIGN > 1:
        off = tl.multiple_of(off, [ALIGN])
    return off[:, None]


@triton.jit
def _row_base(ptr, i_b, o_d, stride_b, stride_d, ALIGN: tl.constexpr):
    """`_row_offset`'s rows as pointers into ptr."""
    return ptr + _row_offset(i_b, o_d, stride_b, stride_d, ALIGN)


@triton.jit
def _aligned_length(seqlen, ALIGN: tl.constexpr):
    """seqlen, known to be a multiple of ALIGN (the caller's promise, `row_align`): the tiles' masks compare their
    tokens with it, and stay whole vectors only where it is a multiple of their width. (tl.multiple_of does not mark
    a kernel argument, which no operation defines: the same value, computed.)"""
    if ALIGN > 1:
        seqlen = seqlen // ALIGN * ALIGN
    return seqlen


@triton.jit
def _tile_mask(t0, o_t, m_d, seqlen):
    """The tokens of the tile from t0 and its mask, [BLOCK_D, TILE]: the block's channels, inside the sequence."""
    t = t0 + o_t
    return t, m_d[:, None] & (t < seqlen)[None, :]


@triton.jit
def _raw_tile(u_base, delta_base, do_base, z_base, t0, o_t, m_d, seqlen, stride_u_l, stride_delta_l, stride_do_l,
              stride_z_l, HAS_DO: tl.constexpr, HAS_Z: tl.constexpr):
    """The inputs of the tile from t0 as stored, [BLOCK_D, TILE] each, 0 off the sequence: delta, u, dy (HAS_DO)
    and z (HAS_Z); delta's values again in the places of those not wanted (do_base, z_base unused then)."""
    t, m = _tile_mask(t0, o_t, m_d, seqlen)
    raw = tl.load(delta_base + t[None, :] * stride_delta_l, mask=m, other=0.0)
    u = tl.load(u_base + t[None, :] * stride_u_l, mask=m, other=0.0)
    z = raw
    if HAS_Z:
        z = tl.load(z_base + t[None, :] * stride_z_l, mask=m, other=0.0)
    dout = raw
    if HAS_DO:
        dout = tl.load(do_base + t[None, :] * stride_do_l, mask=m, other=0.0)
    return raw, u, dout, z


@triton.jit
def _tile_now(u_base, delta_base, do_base, z_base, t0, ahead, o_t, m_d, seqlen, stride_u_l, stride_delta_l,
              stride_do_l, stride_z_l, HAS_DO: tl.constexpr, HAS_Z: tl.constexpr, AHEAD: tl.constexpr):
    """The tile from t0's `_raw_tile`: `ahead` with AHEAD (loaded a tile earlier; the caller issues the next tile's
    loads once this tile's values are taken), else loaded here."""
    cur = ahead
    if not AHEAD:
        cur = _raw_tile(u_base, delta_base, do_base, z_base, t0, o_t, m_d, seqlen, stride_u_l, stride_delta_l,
                        stride_do_l, stride_z_l, HAS_DO, HAS_Z)
    return cur


@triton.jit
def _delta_tile(delta_base, t0, o_t, m_d, seqlen, stride_delta_l, bias, HAS_DELTA_BIAS: tl.constexpr,
                DELTA_SOFTPLUS: tl.constexpr, FAST: tl.constexpr, ACC: tl.constexpr):
    """The backward's segment pass (`_segment_grad`: it loads nothing ahead): the tokens of the tile from t0, their
    mask, raw delta in ACC, and delta after bias and softplus (0 off the sequence: a decay of 1, no input), each
    [BLOCK_D, TILE]."""
    t, m_dt = _tile_mask(t0, o_t, m_d, seqlen)
    raw = tl.load(delta_base + t[None, :] * stride_delta_l, mask=m_dt, other=0.0).to(ACC)
    return t, m_dt, raw, tl.where(m_dt, process_delta(raw, bias[:, None], HAS_DELTA_BIAS, DELTA_SOFTPLUS, FAST), 0.0)


@triton.jit
def _segment_of(counter_ptr, n_programs, n_blocks, batch, n_seg, seg_len, seqlen, REVERSE: tl.constexpr):
    """Segment mode: (block of channels, batch row (int64), segment, its first token, its end) of this
    program, from a ticket taken in launch order. Tickets are segment-major, in sequence order for the
    forward and reversed for the backward, so the neighbour a program waits for always holds an earlier
    ticket: it has started, and nothing it waits for can wait on this program (deadlock-free)."""
    ticket = take_ticket(counter_ptr, n_programs)
    per_seg = n_blocks * batch
    k = ticket // per_seg
    rest = ticket % per_seg
    if REVERSE:
        seg = n_seg - 1 - k
    else:
        seg = k
    t_begin = seg * seg_len
    return rest % n_blocks, (rest // n_blocks).to(tl.int64), seg, t_begin, tl.minimum(seqlen, t_begin + seg_len)


@triton.jit
def _slot(slot_ptr, chain, rows, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr):
    """Per slot, the [NL, BLOCK_D] pointers of chain's hand-over slot (NPAD * BLOCK_D fp32 values)."""
    base = slot_ptr + chain.to(tl.int64) * (SLOTS * NL * BLOCK_D) + tl.arange(0, BLOCK_D)[None, :]
    out = ()
    for j in tl.static_range(SLOTS):
        out = out + (base + rows[j] * BLOCK_D,)
    return out


@triton.jit
def _wait(flag_ptr, chain):
    """Spin until chain's slot is published, then put its flag back to 0 (this program is its only reader):
    the workspace is clean after the launch, without a memset."""
    seen = tl.atomic_add(flag_ptr + chain, 0, sem="acquire")
    while seen == 0:
        seen = tl.atomic_add(flag_ptr + chain, 0, sem="acquire")
    tl.atomic_xchg(flag_ptr + chain, 0, sem="relaxed")  # (the acquire above orders the slot's reads)


@triton.jit
def _receive(slot_ptr, chain, rows, present, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr):
    """The values of chain's slot where `present` (an [NL, 1] mask), else 0; read through L2 (.cg)."""
    ptrs = _slot(slot_ptr, tl.maximum(chain, 0), rows, NL, BLOCK_D, SLOTS)
    out = ()
    for j in tl.static_range(SLOTS):
        out = out + (tl.load(ptrs[j], mask=present, other=0.0, cache_modifier=".cg"),)
    return out


@triton.jit
def _publish(flag_ptr, slot_ptr, chain, own, decay, entering, carried, rows, NL: tl.constexpr,
             BLOCK_D: tl.constexpr, SLOTS: tl.constexpr):
    """Hand on decay * entering + own (per slot) through chain's slot, then raise its flag. An entering
    value of exactly 0 contributes 0 even where the decay overflowed (positive A), as the recurrence gives; where
    `carried` ([BLOCK_D]) is 0 (a packed sequence starts between the entering value and the hand-over) it contributes
    nothing, even a NaN or inf of the sequence before."""
    out = ()
    for j in tl.static_range(SLOTS):
        out = out + (tl.where((entering[j] == 0) | (carried[None, :] == 0), own[j], decay[j] * entering[j] + own[j]),)
    _hand_on(flag_ptr, slot_ptr, chain, out, rows, NL, BLOCK_D, SLOTS)


@triton.jit
def _hand_on(flag_ptr, slot_ptr, chain, values, rows, NL: tl.constexpr, BLOCK_D: tl.constexpr,
             SLOTS: tl.constexpr):
    """Store values (per slot) in chain's slot, then raise its flag."""
    ptrs = _slot(slot_ptr, chain, rows, NL, BLOCK_D, SLOTS)
    for j in tl.static_range(SLOTS):
        tl.store(ptrs[j], values[j])
    tl.debug_barrier()  # every thread's part of the slot is written before the flag says so
    tl.atomic_xchg(flag_ptr + chain, 1, sem="release")


@triton.jit
def _window_tokens(t0, lo, hi, TILE: tl.constexpr):
    """Per token of the tile from t0, whether it is one of a packed row's own, in [lo, hi): the others (its
    neighbours', in the row's edge tiles and chunks) leave the state and its gradient as they are."""
    inside = ()
    for k in tl.static_range(TILE):
        inside = inside + ((t0 + k >= lo) & (t0 + k < hi),)
    return inside


@triton.jit
def _advance(x, p_bc, rows, dl_c, du_c, keeps, A2, NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr,
             TILE: tl.constexpr, IS_VARLEN: tl.constexpr, BC_AHEAD: tl.constexpr = False, window=0,
             WINDOWED: tl.constexpr = False):
    """The states of every slot carried through one tile, h <- a h + delta u B per token (the state
    dropped at a packed sequence's first token; `keeps` is unused otherwise). BC_AHEAD: the next slot's B
    is loaded before this slot's arithmetic. WINDOWED: the tokens outside `window` (`_window_tokens`: another
    sequence's, in a packed row's edge tile) leave the state as it is, whatever their u, delta and B hold."""
    out = ()
    next_rows = _slot_first(p_bc, rows, NL, BLOCK_D, SLOTS, TILE, False, BC_AHEAD)
    for j in tl.static_range(SLOTS):
        rows_j, next_rows = _slot_step(p_bc, rows, j, next_rows, NL, BLOCK_D, SLOTS, TILE, False, BC_AHEAD)
        b_j = rows_j[0]
        xj = x[j]
        for k in tl.static_range(TILE):
            if IS_VARLEN:  # (a select, not a multiplication by 0: a NaN or inf state of the sequence before stays
                # there)
                xj = tl.where(keeps[k] != 0, xj, 0.0)
            new = tl.exp2(dl_c[k][None, :] * A2[j]) * xj + du_c[k][None, :] * b_j[k]
            if WINDOWED:
                xj = tl.where(window[k], new, xj)
            else:
                xj = new
        out = out + (xj,)
    return out


@triton.jit
def _segment_state(u_base, delta_base, bc_base, seq_ptr, t_begin, t_end, seqlen, n_tiles, o_t, m_d, bias, A2, rows,
                   stride_u_l, stride_delta_l,
                   BLOCK_D: tl.constexpr, NL: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr,
                   FAST: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr, DELTA_SOFTPLUS: tl.constexpr,
                   IS_VARLEN: tl.constexpr, ACC: tl.constexpr, TILE_AHEAD: tl.constexpr = False, lo=0,
                   WINDOW: tl.constexpr = False):
    """The forward's first pass over a segment [t_begin, t_end): per slot, the state it ends with from a
    zero entering state, and the factor its entering state is carried by to its end, exp2(A2 * sum delta)
    (0 once a packed sequence starts inside it), and whether it is carried at all (`kept`, [BLOCK_D]: 0 once a
    packed sequence starts inside it). Per (state, token): one exp2 and two multiply-adds.
    TILE_AHEAD: each tile's u and delta are loaded while the tile before it runs. WINDOW (a packed row of one
    sequence, which has a next segment): the tokens before lo are the previous sequence's, a decay of 1 and no input."""
    own = ()
    for j in tl.static_range(SLOTS):
        own = own + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
    total = tl.zeros((BLOCK_D,), dtype=ACC)  # sum of delta since the segment's (or the last sequence's) start
    kept = tl.full((BLOCK_D,), 1.0, ACC)  # 0 once a sequence starts in the segment
    next_in = 0  # (the tile's u and delta loaded ahead, TILE_AHEAD)
    if TILE_AHEAD:
        next_in = _raw_tile(u_base, delta_base, u_base, u_base, t_begin, o_t, m_d, seqlen, stride_u_l, stride_delta_l,
                            stride_u_l, stride_u_l, False, False)
    t_loop = t_begin
    if WINDOW:  # the row's first tile, whose tokens before lo leave the state as it is (outside the loop: its copy of
        # the tile's code with the window's selects cost the loop 120 bytes of spills, sm_90)
        if (t_begin < lo) & (t_begin < t_end):
            own, total, kept, ahead = _state_tile(own, total, kept, next_in, t_begin, t_end, u_base, delta_base,
                                                  bc_base, seq_ptr, seqlen, n_tiles, o_t, m_d, bias, A2, rows,
                                                  stride_u_l, stride_delta_l, lo, BLOCK_D, NL, SLOTS, TILE, FAST,
                                                  HAS_DELTA_BIAS, DELTA_SOFTPLUS, IS_VARLEN, ACC, TILE_AHEAD, WINDOW,
                                                  True)
            if TILE_AHEAD:
                next_in = ahead
            t_loop = t_begin + TILE
    for t0 in range(t_loop, t_end, TILE):
        own, total, kept, ahead = _state_tile(own, total, kept, next_in, t0, t_end, u_base, delta_base, bc_base,
                                              seq_ptr, seqlen, n_tiles, o_t, m_d, bias, A2, rows, stride_u_l,
                                              stride_delta_l, lo, BLOCK_D, NL, SLOTS, TILE, FAST, HAS_DELTA_BIAS,
                                              DELTA_SOFTPLUS, IS_VARLEN, ACC, TILE_AHEAD, WINDOW, False)
        if TILE_AHEAD:  # (a value to carry only then: without it the helper hands back its placeholder)
            next_in = ahead
    decay = ()
    for j in tl.static_range(SLOTS):
        decay = decay + (tl.exp2(A2[j] * total[None, :]) * kept[None, :],)
    return own, decay, kept


@triton.jit
def _state_tile(own, total, kept, next_in, t0, t_end, u_base, delta_base, bc_base, seq_ptr, seqlen, n_tiles, o_t, m_d,
                bias, A2, rows, stride_u_l, stride_delta_l, lo, BLOCK_D: tl.constexpr, NL: tl.constexpr,
                SLOTS: tl.constexpr, TILE: tl.constexpr, FAST: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr,
                DELTA_SOFTPLUS: tl.constexpr, IS_VARLEN: tl.constexpr, ACC: tl.constexpr, TILE_AHEAD: tl.constexpr,
                WINDOW: tl.constexpr, FIRST: tl.constexpr):
    """One tile of `_segment_state` from t0: own, total and kept carried through it, and the next tile's loads issued.
    FIRST (WINDOW): the row's first tile, whose tokens before lo (the previous sequence's) leave the state as it is,
    whatever their u, delta and B hold."""
    NPAD: tl.constexpr = SLOTS * NL
    p_bc = bc_base + (t0 // TILE) * (2 * NPAD * TILE)
    if FAST:  # the B tiles two ahead and the rows' next 128-byte lines into L1 (as the output pass does)
        ahead = tl.minimum(t0 // TILE + 2, n_tiles - 1) - t0 // TILE
        _prefetch_values(p_bc + ahead * (2 * NPAD * TILE), NPAD * TILE, NL, BLOCK_D)
        LINE_U: tl.constexpr = 1024 // u_base.dtype.element_ty.primitive_bitwidth
        if (t0 % LINE_U == 0) & (t0 + LINE_U < t_end):
            prefetch(u_base + (t0 + LINE_U) * stride_u_l, "L1")
            prefetch(delta_base + (t0 + LINE_U) * stride_delta_l, "L1")
    raw, u, _, _ = _tile_now(u_base, delta_base, u_base, u_base, t0, next_in, o_t, m_d, seqlen, stride_u_l,
                             stride_delta_l, stride_u_l, stride_u_l, False, False, TILE_AHEAD)
    if TILE_AHEAD:  # the next tile's loads now, to arrive while this tile's arithmetic runs
        next_in = _raw_tile(u_base, delta_base, u_base, u_base, t0 + TILE, o_t, m_d, seqlen, stride_u_l,
                            stride_delta_l, stride_u_l, stride_u_l, False, False)
    t, m_dt = _tile_mask(t0, o_t, m_d, seqlen)
    if WINDOW:
        m_dt = m_dt & (t >= lo)[None, :]
    dl = tl.where(m_dt, process_delta(raw.to(ACC), bias[:, None], HAS_DELTA_BIAS, DELTA_SOFTPLUS, FAST), 0.0)
    u = u.to(ACC)
    dl_c = columns(dl, BLOCK_D, TILE)
    du_c = columns(dl * u, BLOCK_D, TILE)
    keeps = dl_c
    if IS_VARLEN:
        keeps, _, _ = _tokens(seq_ptr, t0, seqlen, ACC, TILE)
        for k in tl.static_range(TILE):
            total = total * keeps[k] + dl_c[k]
            kept = kept * keeps[k]
    else:
        total += tl.sum(dl, axis=1)
    if FIRST:
        own = _advance(own, p_bc, rows, dl_c, du_c, keeps, A2, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN, False,
                       _window_tokens(t0, lo, t0 + TILE, TILE), True)
    else:
        own = _advance(own, p_bc, rows, dl_c, du_c, keeps, A2, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN)
    return own, total, kept, next_in


@triton.jit
def _lane_share(ys, lane, NL: tl.constexpr, BLOCK_D: tl.constexpr, TPL: tl.constexpr):
    """Per-token values every lane of a channel holds (a tuple of NL TPL [BLOCK_D] tensors, a slice of the [NL,
    BLOCK_D] layout) as each lane's share, [NL, BLOCK_D, TPL]: lane g's are tokens g TPL .. g TPL + TPL - 1 (lane:
    [NL, 1], the lanes' index). A select each, no data moves between threads."""
    out = ()
    for m in tl.static_range(TPL):
        v = ys[(NL - 1) * TPL + m][None, :]
        for g in tl.static_range(NL - 2, -1, -1):
            v = tl.where(lane == g, ys[g * TPL + m][None, :], v)
        out = out + (v,)
    return _join2(out, NL, BLOCK_D, TPL)


@triton.jit
def _lane_tokens(x, NL: tl.constexpr, BLOCK_D: tl.constexpr, TPL: tl.constexpr):
    """A [BLOCK_D, NL TPL] tile as [NL, BLOCK_D, TPL], lane g's tokens g TPL .. g TPL + TPL - 1 (`_lane_share`'s
    layout). Where the tile's loads gave each of a channel's lanes those tokens (its vectors of TPL tokens, as Triton
    lays out a [BLOCK_D, TILE] load over a warp), this moves nothing (sm_90 offline: no shuffle, no shared memory)."""
    return tl.permute(tl.reshape(x, (BLOCK_D, NL, TPL)), (1, 0, 2))


@triton.jit
def _lane_columns(x3, lane, NL: tl.constexpr, BLOCK_D: tl.constexpr, TPL: tl.constexpr):
    """The inverse of `_lane_share`: each lane's share [NL, BLOCK_D, TPL] (lane g's tokens g TPL .. g TPL + TPL - 1)
    as the tile's NL TPL columns, each a [BLOCK_D] tensor every lane of a channel holds (what the slot loops take).
    Token k's column is the sum over the lanes of its owner's value and the others' zeros: exact (but a -0.0, which
    comes out +0.0), a NaN or inf where the owner holds one, never one of another lane's; log2 NL shuffles a column."""
    cols = ()
    parts = _cols3(x3, NL, BLOCK_D, TPL)
    for k in tl.static_range(NL * TPL):
        cols = cols + (tl.sum(tl.where(lane == k // TPL, parts[k % TPL], 0.0), axis=0),)
    return cols


@triton.jit
def _fwd_tile(t0, lo, hi, h, next_in, n_bs, n_cs, A2, rows, bias, u_base, delta_base, z_base, y_base, bc_base, D_ptr,
              y_ptr, last_ptr, ckpt_ptr, seq_ptr, i_b, n_ckpt, n_tiles, seqlen, dstate, state_size, o_d, o_t, m_d,
              stride_u_l, stride_delta_l, stride_z_l, stride_y_l,
              BLOCK_D: tl.constexpr, NL: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr, CKPT: tl.constexpr,
              PREFETCH_BC: tl.constexpr, PREFETCH_TILES: tl.constexpr, FAST: tl.constexpr, HAS_D: tl.constexpr,
              HAS_Z: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr, DELTA_SOFTPLUS: tl.constexpr,
              IS_VARLEN: tl.constexpr, STORE_LAST: tl.constexpr, STORE_CKPT: tl.constexpr, ACC: tl.constexpr,
              BC_AHEAD: tl.constexpr, CK: tl.constexpr, CK_RUN: tl.constexpr, WINDOW: tl.constexpr,
              MASKED: tl.constexpr, SPLIT_OUT: tl.constexpr = False):
    """One tile of `_scan_fwd_kernel`'s output pass (its loads for the next tile issued here, B and C a tile ahead
    with PREFETCH_BC): from the state h entering it, returns the state leaving it and what was loaded ahead. MASKED: the
    tile holds tokens outside the row's own [lo, hi) (a packed row's first or last tile): y is stored for its own only,
    and with WINDOW (rows of one sequence, no per-token sequence index) the others pass as a decay of 1 with no input.
    Without it the tile runs the dense batch's code. SPLIT_OUT (the caller's, NL > 1 and TILE a multiple of NL): each
    lane gates, adds D's term to and stores its share of the tile's tokens."""
    NPAD: tl.constexpr = SLOTS * NL
    if STORE_CKPT:
        # the state entering this backward chunk (ROWS: by the row whose sequence holds its first token)
        if (t0 % CKPT == 0) & (t0 >= lo):
            p_ck = ckpt_ptr + (i_b * n_ckpt + t0 // CKPT) * state_size + o_d[None, :] * dstate
            _store_states(p_ck, rows, h, m_d, dstate, NL, BLOCK_D, SLOTS, CK, CK_RUN)
    raw, u, _, zt = next_in  # this tile's inputs, loaded a tile ahead
    t, m_dt = _tile_mask(t0, o_t, m_d, seqlen)
    raw = raw.to(ACC)
    u = u.to(ACC)
    if HAS_Z:
        zt = zt.to(ACC)
    p_bc = bc_base + (t0 // TILE) * (2 * NPAD * TILE)
    if FAST:
        # B and C a few tiles ahead into L1: read just in time, they would wait an L2 latency
        # each tile (every program of the batch row reads them; L2 holds them, L1 does not)
        ahead = tl.minimum(t0 // TILE + PREFETCH_TILES, n_tiles - 1) - t0 // TILE
        _prefetch_values(p_bc + ahead * (2 * NPAD * TILE), 2 * NPAD * TILE, NL, BLOCK_D)
        LINE_U: tl.constexpr = 1024 // u_base.dtype.element_ty.primitive_bitwidth  # tokens per 128 bytes
        if (t0 % LINE_U == 0) & (t0 + LINE_U < seqlen):  # the rows of u, delta, z: their next 128-byte lines
            prefetch(u_base + (t0 + LINE_U) * stride_u_l, "L1")
            prefetch(delta_base + (t0 + LINE_U) * stride_delta_l, "L1")
            if HAS_Z:
                prefetch(z_base + (t0 + LINE_U) * stride_z_l, "L1")
    if PREFETCH_BC:
        bs = n_bs
        cs = n_cs
        n_bs, n_cs = _bc_tile(p_bc + 2 * NPAD * TILE, rows, NL, BLOCK_D, SLOTS, TILE)
    next_in = _raw_tile(u_base, delta_base, u_base, z_base, t0 + TILE, o_t, m_d, seqlen, stride_u_l, stride_delta_l,
                        stride_u_l, stride_z_l, False, HAS_Z)
    m_w = m_dt
    if WINDOW:  # (rows of one sequence) the tokens of other sequences: a decay of 1 and no input
        if MASKED:
            m_w = m_dt & ((t >= lo) & (t < hi))[None, :]
    dl = tl.where(m_w, process_delta(raw, bias[:, None], HAS_DELTA_BIAS, DELTA_SOFTPLUS, FAST), 0.0)
    dl_c = columns(dl, BLOCK_D, TILE)
    du_c = columns(dl * u, BLOCK_D, TILE)
    if IS_VARLEN:  # per token: keep the state (not a sequence's first token), ends a sequence, its index
        keeps, ends, seqs = _tokens(seq_ptr, t0, seqlen, ACC, TILE)
    window = 0
    if WINDOW and MASKED:
        window = _window_tokens(t0, lo, hi, TILE)
    # slot after slot, each through the tile's tokens: only one slot's B and C are live at a time
    accs = ()
    for k in tl.static_range(TILE):
        accs = accs + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
    hn = ()
    # (BC_AHEAD never with PREFETCH_BC: the caller says so)
    next_rows = _slot_first(p_bc, rows, NL, BLOCK_D, SLOTS, TILE, True, BC_AHEAD)
    for j in tl.static_range(SLOTS):
        if PREFETCH_BC:
            b_j = bs[j]
            c_j = cs[j]
        else:
            rows_j, next_rows = _slot_step(p_bc, rows, j, next_rows, NL, BLOCK_D, SLOTS, TILE, True, BC_AHEAD)
            b_j, c_j = rows_j
        x = h[j]
        an = ()
        for k in tl.static_range(TILE):
            if IS_VARLEN:  # (a select: see `_advance`)
                x = tl.where(keeps[k] != 0, x, 0.0)
            if WINDOW and MASKED:  # other sequences' tokens leave the state as it is, whatever their inputs hold
                # (selecting the inputs instead, a decay of 1 and B and u of 0, off the state's chain, was 3.3 %
                # slower at 64 x 256, H200, fifty-fourth session, though 14 fewer registers offline)
                x = tl.where(window[k], tl.exp2(dl_c[k][None, :] * A2[j]) * x + du_c[k][None, :] * b_j[k], x)
            else:
                x = tl.exp2(dl_c[k][None, :] * A2[j]) * x + du_c[k][None, :] * b_j[k]
            an = an + (accs[k] + x * c_j[k],)
            if IS_VARLEN:
                if STORE_LAST:  # the state after a sequence's last token is its final state
                    if ends[k] & (t0 + k >= lo) & (t0 + k < hi):
                        tl.store(last_ptr + seqs[k] * state_size + o_d[None, :] * dstate + rows[j], x,
                                 mask=(rows[j] < dstate) & m_d[None, :])
        accs = an
        hn = hn + (x,)
    h = hn
    ys = ()
    for k in tl.static_range(TILE):
        ys = ys + (tl.sum(accs[k], axis=0),)
    if SPLIT_OUT:
        # the lanes of a channel share its tokens' output work: lane g takes tokens g TPL .. g TPL + TPL - 1 of the
        # sums every lane holds (a select) and of u and z, the gate and D's term, and stores them: each lane its share,
        # where the [BLOCK_D, TILE] layout of the sums would repeat every channel's work on each of its lanes
        TPL: tl.constexpr = TILE // NL
        lane = rows[0]  # [NL, 1]
        y3 = _lane_share(ys, lane, NL, BLOCK_D, TPL)
        t3 = t0 + lane[:, :, None] * TPL + tl.arange(0, TPL)[None, None, :]  # [NL, 1, TPL]
        m3 = m_d[None, :, None] & _row_tokens(t3, seqlen, lo, hi, MASKED)  # (MASKED: the row's own tokens only)
        if HAS_D:
            y3 += tl.load(D_ptr + o_d, mask=m_d, other=0.0).to(ACC)[None, :, None] * _lane_tokens(u, NL, BLOCK_D, TPL)
        if HAS_Z:
            y3 *= _fast_silu(_lane_tokens(zt, NL, BLOCK_D, TPL), FAST)
        tl.store(y_base[None, :, :] + t3 * stride_y_l, y3.to(y_ptr.dtype.element_ty), mask=m3)
    else:
        y = join_columns(ys, BLOCK_D, TILE)
        if HAS_D:
            y += tl.load(D_ptr + o_d, mask=m_d, other=0.0).to(ACC)[:, None] * u
        if HAS_Z:
            y *= _fast_silu(zt, FAST)
        if MASKED:  # the row's first or last tile: its own tokens only
            tl.store(y_base + t[None, :] * stride_y_l, y.to(y_ptr.dtype.element_ty),
                     mask=m_dt & ((t >= lo) & (t < hi))[None, :])
        else:
            tl.store(y_base + t[None, :] * stride_y_l, y.to(y_ptr.dtype.element_ty), mask=m_dt)
    return h, next_in, n_bs, n_cs


@triton.jit
def _scan_fwd_kernel(
    u_ptr, delta_ptr, A_ptr, bc_ptr, D_ptr, z_ptr, delta_bias_ptr, seq_ptr,
    y_ptr, last_ptr, ckpt_ptr, counter_ptr, flag_ptr, slot_ptr, rows_ptr,
    batch, dim, dstate, seqlen, dims_per_group, ngroups, n_tiles, n_ckpt, n_seg, seg_len, n_programs,
    stride_u_b, stride_u_d, stride_u_l,
    stride_delta_b, stride_delta_d, stride_delta_l,
    stride_A_d, stride_A_n,
    stride_z_b, stride_z_d, stride_z_l,
    stride_y_b, stride_y_d, stride_y_l,
    BLOCK_D: tl.constexpr, NL: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr, CKPT: tl.constexpr,
    PREFETCH_BC: tl.constexpr, PREFETCH_TILES: tl.constexpr, FAST: tl.constexpr, HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr, DELTA_SOFTPLUS: tl.constexpr,
    IS_VARLEN: tl.constexpr, STORE_LAST: tl.constexpr, STORE_CKPT: tl.constexpr, SEGMENTS: tl.constexpr,
    ACC: tl.constexpr, HAND_LATE: tl.constexpr = False, BC_AHEAD: tl.constexpr = False, CK: tl.constexpr = 1,
    CK_RUN: tl.constexpr = 0, TILE_AHEAD: tl.constexpr = False, ROWS: tl.constexpr = False, WINDOW: tl.constexpr = False,
    ALIGN_IN: tl.constexpr = 1, ALIGN_OUT: tl.constexpr = 1, CLEAN: tl.constexpr = False, PEEL: tl.constexpr = False,
    SPLIT_OUT: tl.constexpr = False,
):
    """A program owns BLOCK_D channels; its NL lanes per channel each hold SLOTS of its states, the
    state n = j * NL + lane in slot j (a tuple of [NL, BLOCK_D] tensors: every state of a lane in its
    own registers). Time runs sequentially, one token after another, TILE tokens per load: the tiles
    of u, delta, z are loaded and y stored as [BLOCK_D, TILE] vectors per thread and split into
    columns in registers. Per (state, token): one exp2 and three multiply-adds; y sums the slots in
    registers, then the NL lanes (log2 NL shuffles per token).

    SEGMENTS (where the channels alone give too few programs): the sequence is cut into n_seg segments
    of seg_len tokens, one program each. A program first finds the state its segment ends with from a
    zero entering state (`_segment_state`), waits for the state entering its segment (published by the
    program of the previous segment, which took an earlier ticket), publishes decay * entering + own
    for the next one at once, so the serial chain between programs is one multiply-add per state,
    then runs the output pass from the entering state.
    HAND_LATE (segments where the channels alone already fill the GPU, and segments only even out its
    waves): no first pass; a program waits for the state entering its segment, runs the output pass and
    hands on the state it ends with. Tickets are segment-major, so the program waited for took its ticket a
    full round of programs earlier and has, in the usual case, finished.
    ROWS (packed sequences): the segments are the rows of `varlen_rows`, each sequence cut into segments of its own
    (SEGMENTS, where the configuration has segments: a chain of its own, a sequence's first segment waits for nothing;
    without, a row holds whole sequences and neither waits nor hands on, and the kernel has no hand-over code) or short
    ones sharing a row, from the tile holding its first token; a row's tokens outside its own, [lo, hi), store nothing:
    y, the backward's states and final states are the neighbouring rows'. Shared rows (IS_VARLEN) run those tokens
    through the recurrence, the state dropped at each sequence's first token; rows of one sequence (WINDOW) pass them as
    a decay of 1 with no input, so that the state is zero before the sequence and final after it. Only a row's first and
    last tile take the window's masks (`_fwd_tile`). CLEAN (shared rows): a tile inside the row's tokens that no
    sequence starts in (nor, with STORE_LAST, ends in) runs the dense code too (`_one_sequence`); the others the
    sequence index and the masks. PEEL (WINDOW rows, PEEL_EDGE_TILES_FWD): the masked first and last tiles run
    outside the loop of the dense ones, in the same order (the same bits).
    ALIGN_IN, ALIGN_OUT (`row_align`): what the rows of u, delta, z, and of y and seqlen, are known multiples of.
    SPLIT_OUT (`SPLIT_OUT_FWD`; NL > 1 and TILE a multiple of NL): each of a channel's lanes gates, adds D's term to
    and stores its share of a tile's tokens (`_fwd_tile`), instead of every lane repeating the channel's."""
    seqlen = _aligned_length(seqlen, ALIGN_OUT)
    SPLIT: tl.constexpr = SPLIT_OUT and NL > 1 and TILE % NL == 0  # (`_fwd_tile`'s SPLIT_OUT)
    n_blocks = tl.cdiv(dim, BLOCK_D)
    lo = 0  # (ROWS: the row's own tokens, [lo, hi))
    hi = seqlen
    if ROWS:
        ticket = take_ticket(counter_ptr, n_programs)
        i_d = ticket % n_blocks
        r = (ticket // n_blocks).to(tl.int64)  # rows are segment-major: a row's previous segment is an earlier row
        entry = rows_ptr + r * 7
        t_begin = tl.multiple_of(tl.load(entry).to(tl.int32), TILE)  # (whole tiles: the loads stay vectors)
        t_end = tl.load(entry + 1).to(tl.int32)
        lo = tl.load(entry + 2).to(tl.int32)
        hi = tl.load(entry + 3).to(tl.int32)
        prev = tl.load(entry + 4)
        i_seq = tl.load(entry + 6)  # (its sequence, where the row holds one)
        i_b = r * 0
        seg = (prev >= 0).to(tl.int32)  # (0 for a sequence's first segment: nothing to wait for)
        has_next = False  # (rows of whole sequences, no SEGMENTS: no row hands on or waits)
        if SEGMENTS:
            has_next = tl.load(entry + 5) != 0
    elif SEGMENTS:
        i_d, i_b, seg, t_begin, t_end = _segment_of(counter_ptr, n_programs, n_blocks, batch, n_seg, seg_len, seqlen,
                                                    False)
    else:  # (spelled out here: triton 3.6 does not compile a helper that returns early with ints)
        i_d = tl.program_id(0)
        i_b = tl.program_id(1).to(tl.int64)
        seg = 0
        t_begin = 0
        t_end = seqlen
    o_d = (i_d * BLOCK_D + tl.arange(0, BLOCK_D)).to(tl.int64)
    o_g = tl.arange(0, NL)
    o_t = tl.arange(0, TILE)
    m_d = o_d < dim
    g = ((i_d * BLOCK_D) // dims_per_group).to(tl.int64)  # the block's channels share one group

    bias = tl.zeros((BLOCK_D,), dtype=ACC)
    if HAS_DELTA_BIAS:
        bias = tl.load(delta_bias_ptr + o_d, mask=m_d, other=0.0).to(ACC)
    A2 = ()
    h = ()
    rows = ()  # per slot: the states n of the NL lanes, [NL, 1]
    for j in tl.static_range(SLOTS):
        n = (j * NL + o_g)[:, None]
        m_n = n < dstate
        rows = rows + (n,)
        A2 = A2 + (tl.load(A_ptr + o_d[None, :] * stride_A_d + n * stride_A_n, mask=m_n & m_d[None, :],
                           other=0.0).to(ACC) * LOG2E,)
        h = h + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
    u_base = _row_base(u_ptr, i_b, o_d, stride_u_b, stride_u_d, ALIGN_IN)
    delta_base = _row_base(delta_ptr, i_b, o_d, stride_delta_b, stride_delta_d, ALIGN_IN)
    z_base = _row_base(z_ptr, i_b, o_d, stride_z_b, stride_z_d, ALIGN_IN)
    y_base = _row_base(y_ptr, i_b, o_d, stride_y_b, stride_y_d, ALIGN_OUT)
    NPAD: tl.constexpr = SLOTS * NL
    INNER_VARLEN: tl.constexpr = IS_VARLEN and not CLEAN  # (ROWS: the inner tiles' form)
    bc_base = bc_ptr + (i_b * ngroups + g) * n_tiles * (2 * NPAD * TILE) + o_d[None, :] * 0
    state_size = dim * dstate
    if SEGMENTS:
        if ROWS:
            chain = r * n_blocks + i_d  # this program's hand-over slot and flag, and the previous segment's
            chain_prev = prev * n_blocks + i_d
        else:
            chain = (i_b * n_seg + seg) * n_blocks + i_d
            chain_prev = chain - n_blocks
            has_next = seg < n_seg - 1
        if not HAND_LATE:
            # A. the state the segment ends with from a zero entering one (not needed by the last segment)
            own, decay, carried = _segment_state(u_base, delta_base, bc_base, seq_ptr, t_begin,
                                                 tl.where(has_next, t_end, t_begin), seqlen, n_tiles, o_t, m_d, bias,
                                                 A2, rows, stride_u_l, stride_delta_l, BLOCK_D, NL, SLOTS, TILE, FAST,
                                                 HAS_DELTA_BIAS, DELTA_SOFTPLUS, IS_VARLEN, ACC, TILE_AHEAD, lo,
                                                 WINDOW)
        # B. the state entering the segment, and (not HAND_LATE) at once the one leaving it for the next segment;
        # with HAND_LATE that one is handed on after the output pass
        if seg > 0:
            _wait(flag_ptr, chain_prev)
        h = _receive(slot_ptr, chain_prev, rows, (o_g[:, None] * 0 + seg) > 0, NL, BLOCK_D, SLOTS)
        if not HAND_LATE:
            if has_next:
                _publish(flag_ptr, slot_ptr, chain, own, decay, h, carried, rows, NL, BLOCK_D, SLOTS)
    # C. the output pass. Software pipelining: the next tile's loads are issued before this tile's
    # arithmetic (a long sequence is one serial walk per program: without it, every tile waits a full
    # memory latency)
    next_in = _raw_tile(u_base, delta_base, u_base, z_base, t_begin, o_t, m_d, seqlen, stride_u_l, stride_delta_l,
                        stride_u_l, stride_z_l, False, HAS_Z)
    n_bs = ()  # (B and C of the next tile, PREFETCH_BC)
    n_cs = ()
    if PREFETCH_BC:
        n_bs, n_cs = _bc_tile(bc_base + (t_begin // TILE) * (2 * NPAD * TILE), rows, NL, BLOCK_D, SLOTS, TILE)
    t_loop = t_begin
    t_stop = t_end
    if PEEL:  # (WINDOW rows) the masked tiles outside the dense tiles' loop, which then holds the dense tile alone
        if t_begin < lo:  # the row's first tile holds the previous sequence's last tokens
            h, next_in, n_bs, n_cs = _fwd_tile(t_begin, lo, hi, h, next_in, n_bs, n_cs, A2, rows, bias,
                u_base, delta_base, z_base, y_base, bc_base, D_ptr, y_ptr, last_ptr, ckpt_ptr,
                seq_ptr, i_b, n_ckpt, n_tiles, seqlen, dstate, state_size, o_d, o_t, m_d,
                stride_u_l, stride_delta_l, stride_z_l, stride_y_l, BLOCK_D, NL, SLOTS, TILE, CKPT,
                PREFETCH_BC, PREFETCH_TILES, FAST, HAS_D, HAS_Z, HAS_DELTA_BIAS, DELTA_SOFTPLUS,
                IS_VARLEN, STORE_LAST, STORE_CKPT, ACC, BC_AHEAD, CK, CK_RUN, WINDOW, True, SPLIT)
            t_loop = t_begin + TILE
        # the tiles from t_loop that end by hi (and by the segment's end) are inner: the loop below runs them dense;
        # the rest, one tile at most (the sequence's last, holding the next one's first tokens), runs masked after it
        t_stop = tl.minimum(tl.maximum(t_loop, hi // TILE * TILE), t_end)
    for t0 in range(t_loop, t_stop, TILE):
        if ROWS and not PEEL:  # a row's first and last tile hold its neighbours' tokens: only they take the masks
            inner = (t0 >= lo) & (t0 + TILE <= hi)
            if IS_VARLEN and CLEAN:  # (rows shared by short sequences: a tile inside one sequence too)
                inner = inner & _one_sequence(seq_ptr, t0, seqlen, TILE, STORE_LAST)
            if inner:
                h, next_in, n_bs, n_cs = _fwd_tile(t0, lo, hi, h, next_in, n_bs, n_cs, A2, rows, bias,
                    u_base, delta_base, z_base, y_base, bc_base, D_ptr, y_ptr, last_ptr, ckpt_ptr,
                    seq_ptr, i_b, n_ckpt, n_tiles, seqlen, dstate, state_size, o_d, o_t, m_d,
                    stride_u_l, stride_delta_l, stride_z_l, stride_y_l, BLOCK_D, NL, SLOTS, TILE, CKPT,
                    PREFETCH_BC, PREFETCH_TILES, FAST, HAS_D, HAS_Z, HAS_DELTA_BIAS, DELTA_SOFTPLUS,
                    INNER_VARLEN, STORE_LAST, STORE_CKPT, ACC, BC_AHEAD, CK, CK_RUN, WINDOW, False, SPLIT)
            else:
                h, next_in, n_bs, n_cs = _fwd_tile(t0, lo, hi, h, next_in, n_bs, n_cs, A2, rows, bias,
                    u_base, delta_base, z_base, y_base, bc_base, D_ptr, y_ptr, last_ptr, ckpt_ptr,
                    seq_ptr, i_b, n_ckpt, n_tiles, seqlen, dstate, state_size, o_d, o_t, m_d,
                    stride_u_l, stride_delta_l, stride_z_l, stride_y_l, BLOCK_D, NL, SLOTS, TILE, CKPT,
                    PREFETCH_BC, PREFETCH_TILES, FAST, HAS_D, HAS_Z, HAS_DELTA_BIAS, DELTA_SOFTPLUS,
                    IS_VARLEN, STORE_LAST, STORE_CKPT, ACC, BC_AHEAD, CK, CK_RUN, WINDOW, True, SPLIT)
        else:  # (a dense batch's row; or PEEL's inner tiles, without the sequence index)
            h, next_in, n_bs, n_cs = _fwd_tile(t0, lo, hi, h, next_in, n_bs, n_cs, A2, rows, bias, u_base,
                delta_base, z_base, y_base, bc_base, D_ptr, y_ptr, last_ptr, ckpt_ptr, seq_ptr, i_b, n_ckpt,
                n_tiles, seqlen, dstate, state_size, o_d, o_t, m_d, stride_u_l, stride_delta_l, stride_z_l,
                stride_y_l, BLOCK_D, NL, SLOTS, TILE, CKPT, PREFETCH_BC, PREFETCH_TILES, FAST, HAS_D, HAS_Z,
                HAS_DELTA_BIAS, DELTA_SOFTPLUS, IS_VARLEN, STORE_LAST, STORE_CKPT, ACC, BC_AHEAD, CK,
                CK_RUN, WINDOW, False, SPLIT)
    if PEEL:
        for t0 in range(t_stop, t_end, TILE):
            h, next_in, n_bs, n_cs = _fwd_tile(t0, lo, hi, h, next_in, n_bs, n_cs, A2, rows, bias,
                u_base, delta_base, z_base, y_base, bc_base, D_ptr, y_ptr, last_ptr, ckpt_ptr,
                seq_ptr, i_b, n_ckpt, n_tiles, seqlen, dstate, state_size, o_d, o_t, m_d,
                stride_u_l, stride_delta_l, stride_z_l, stride_y_l, BLOCK_D, NL, SLOTS, TILE, CKPT,
                PREFETCH_BC, PREFETCH_TILES, FAST, HAS_D, HAS_Z, HAS_DELTA_BIAS, DELTA_SOFTPLUS,
                IS_VARLEN, STORE_LAST, STORE_CKPT, ACC, BC_AHEAD, CK, CK_RUN, WINDOW, True, SPLIT)

    if SEGMENTS:
        if HAND_LATE:
            if has_next:
                _hand_on(flag_ptr, slot_ptr, chain, h, rows, NL, BLOCK_D, SLOTS)
    if STORE_LAST:
        if WINDOW:  # a sequence's last segment: the state after its last token (unchanged since)
            if not has_next:  # (without SEGMENTS: every row's sequence ends in it)
                p_last = last_ptr + i_seq * state_size + o_d[None, :] * dstate
                _store_states(p_last, rows, h, m_d, dstate, NL, BLOCK_D, SLOTS, 1, 0)
        elif not IS_VARLEN:
            if seg == n_seg - 1:
                p_last = last_ptr + i_b * state_size + o_d[None, :] * dstate
                _store_states(p_last, rows, h, m_d, dstate, NL, BLOCK_D, SLOTS, 1, 0)


@triton.jit
def _segment_grad(delta_base, do_base, z_base, bc_base, seq_ptr, dlast_ptr, t_begin, t_end, seqlen, n_tiles,
                  state_size, dstate, o_t, o_d, m_d, bias, A2, rows, stride_delta_l, stride_do_l, stride_z_l, hi,
                  BLOCK_D: tl.constexpr, NL: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr,
                  FAST: tl.constexpr, HAS_Z: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr,
                  DELTA_SOFTPLUS: tl.constexpr, IS_VARLEN: tl.constexpr, HAS_DLAST: tl.constexpr, ACC: tl.constexpr,
                  ROWS: tl.constexpr = False):
    """The backward's first pass over a segment [t_begin, t_end), forwards: per slot, the gradient its own
    tokens send to the state entering it, sum_t q_t (C_t dy_t (+ a sequence's last-state gradient at its
    last token)) with q_t = a_t_begin ... a_t over the tokens that state reaches (not from a packed sequence's
    first token on), q at the segment's end, the factor a gradient reaching its end is carried back by, and whether
    it is carried at all ([BLOCK_D], 0 where a packed sequence starts inside the segment). Per (state, token): one
    exp2, two multiplies and a multiply-add. ROWS: tokens from `hi` on (a neighbouring row's, after its sequence's
    end) pass as a decay of 1 with no dy."""
    NPAD: tl.constexpr = SLOTS * NL
    own = ()
    q = ()
    for j in tl.static_range(SLOTS):
        own = own + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
        q = q + (tl.full((NL, BLOCK_D), 1.0, ACC),)
    inside = tl.full((BLOCK_D,), 1.0, ACC)  # 0 once a packed sequence starts in the segment
    for t0 in range(t_begin, t_end, TILE):
        p_bc = bc_base + (t0 // TILE) * (2 * NPAD * TILE)
        if FAST:  # the C tiles two ahead and the rows' next 128-byte lines into L1
            ahead = tl.minimum(t0 // TILE + 2, n_tiles - 1) - t0 // TILE
            _prefetch_values(p_bc + ahead * (2 * NPAD * TILE) + NPAD * TILE, NPAD * TILE, NL, BLOCK_D)
            LINE_U: tl.constexpr = 1024 // do_base.dtype.element_ty.primitive_bitwidth
            if (t0 % LINE_U == 0) & (t0 + LINE_U < t_end):
                prefetch(delta_base + (t0 + LINE_U) * stride_delta_l, "L1")
                prefetch(do_base + (t0 + LINE_U) * stride_do_l, "L1")
                if HAS_Z:
                    prefetch(z_base + (t0 + LINE_U) * stride_z_l, "L1")
        t, m_dt, _, dl = _delta_tile(delta_base, t0, o_t, m_d, seqlen, stride_delta_l, bias, HAS_DELTA_BIAS,
                                     DELTA_SOFTPLUS, FAST, ACC)
        dy = tl.load(do_base + t[None, :] * stride_do_l, mask=m_dt, other=0.0).to(ACC)
        if HAS_Z:
            zt = tl.load(z_base + t[None, :] * stride_z_l, mask=m_dt, other=0.0).to(ACC)
            dy = dy * zt * tl.sigmoid(zt)
        if ROWS:  # (after the loads, whose mask stays the sequence's: vector loads)
            m_w = m_dt & (t < hi)[None, :]
            dl = tl.where(m_w, dl, 0.0)
            dy = tl.where(m_w, dy, 0.0)
        dl_c = columns(dl, BLOCK_D, TILE)
        dy_c = columns(dy, BLOCK_D, TILE)
        ins = 0  # (IS_VARLEN) per token: whether the state entering the segment still reaches it
        ends = 0
        seqs = 0
        if IS_VARLEN:
            keeps, ends, seqs = _tokens(seq_ptr, t0, seqlen, ACC, TILE)
            ins = ()
            for k in tl.static_range(TILE):
                inside = inside * keeps[k]
                ins = ins + (inside,)
        if ROWS:  # (only the row's last tile holds tokens from hi on: the others take the plain code)
            if t0 + TILE > hi:
                own, q = _grad_slots(own, q, p_bc, rows, dl_c, dy_c, A2, ins, ends, seqs, dlast_ptr, state_size,
                                     dstate, o_d, m_d, t0, hi, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN, HAS_DLAST, ACC,
                                     True)
            else:
                own, q = _grad_slots(own, q, p_bc, rows, dl_c, dy_c, A2, ins, ends, seqs, dlast_ptr, state_size,
                                     dstate, o_d, m_d, t0, hi, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN, HAS_DLAST, ACC,
                                     False)
        else:
            own, q = _grad_slots(own, q, p_bc, rows, dl_c, dy_c, A2, ins, ends, seqs, dlast_ptr, state_size, dstate,
                                 o_d, m_d, t0, hi, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN, HAS_DLAST, ACC, False)
    return own, q, inside


@triton.jit
def _grad_slots(own, q, p_bc, rows, dl_c, dy_c, A2, ins, ends, seqs, dlast_ptr, state_size, dstate, o_d, m_d, t0, hi,
                NL: tl.constexpr, BLOCK_D: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr,
                IS_VARLEN: tl.constexpr, HAS_DLAST: tl.constexpr, ACC: tl.constexpr, MASK_HI: tl.constexpr):
    """One tile of `_segment_grad` for every slot: own += q_t v_t and q *= a_t per token, v_t = C_t dy_t (+ a
    sequence's last-state gradient at its last token). IS_VARLEN: a token the segment's entering state no longer
    reaches (`ins`) adds nothing, even a NaN of its sequence's. MASK_HI: the tokens from hi on (another sequence's)
    add nothing, whatever their C holds."""
    NPAD: tl.constexpr = SLOTS * NL
    own_n = ()
    q_n = ()
    for j in tl.static_range(SLOTS):
        c_j = _row_values(p_bc + (NPAD + rows[j]) * TILE, NL, BLOCK_D, TILE)
        gj = own[j]
        qj = q[j]
        for k in tl.static_range(TILE):
            qj = qj * tl.exp2(dl_c[k][None, :] * A2[j])
            v = c_j[k] * dy_c[k][None, :]
            if IS_VARLEN:
                if HAS_DLAST:
                    v += _dlast_at(dlast_ptr, seqs[k], ends[k], state_size, dstate, o_d, m_d, rows[j], ACC)
                gj = tl.where(ins[k][None, :] != 0, gj + qj * v, gj)
            elif MASK_HI:
                gj = tl.where(t0 + k < hi, gj + qj * v, gj)
            else:
                gj = gj + qj * v
        own_n = own_n + (gj,)
        q_n = q_n + (qj,)
    return own_n, q_n


@triton.jit
def _row_tokens(t, seqlen, lo, hi, WINDOW: tl.constexpr):
    """Which tokens t the backward keeps: inside the sequence, and with WINDOW (a packed row's edge chunk) inside the
    row's own [lo, hi)."""
    m = t < seqlen
    if WINDOW:
        m = m & (t >= lo) & (t < hi)
    return m


@triton.jit
def _one_sequence(seq_ptr, c0, seqlen, CHUNK: tl.constexpr, HAS_DLAST: tl.constexpr):
    """Whether the chunk (or the forward's tile) [c0, c0 + CHUNK) of a packed row continues the sequence of token c0 - 1
    to its end: none of its tokens starts a sequence (nor, with HAS_DLAST, ends one: the token after the chunk is read
    too), so that it can run as a dense batch's chunk (the sequence index is monotonic: equal at both ends, equal
    between). (The first chunk compares token 0 with itself: its stored entering state is zero, as a dense batch's.)"""
    last = c0 + CHUNK - 1
    if HAS_DLAST:
        last = last + 1
    s0 = tl.load(seq_ptr + tl.maximum(c0 - 1, 0))
    s1 = tl.load(seq_ptr + tl.minimum(last, seqlen - 1))
    return (last < seqlen) & (s0 == s1)


@triton.jit
def _bwd_chunk(c, c0, lo, hi, R, dA, dD, dbias, A2, rows, bias, Dv, u_base, delta_base, do_base, z_base, bc_base,
               scratch_base, ckpt_ptr, seq_ptr, dlast_ptr, du_ptr, ddelta_ptr, dz_ptr, dB_ptr, dC_ptr, out_base,
               dbc_base, i_b, n_ckpt, seqlen, dstate, state_size, o_d, o_t, m_d, stride_u_l, stride_delta_l,
               stride_do_l, stride_z_l, stride_o_l,
               BLOCK_D: tl.constexpr, NL: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr, CHUNK: tl.constexpr,
               FAST: tl.constexpr, HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr,
               DELTA_SOFTPLUS: tl.constexpr, IS_VARLEN: tl.constexpr, HAS_DLAST: tl.constexpr,
               DETERMINISTIC: tl.constexpr, ACC: tl.constexpr, BC_AHEAD: tl.constexpr, TILE_AHEAD: tl.constexpr,
               CK: tl.constexpr, CK_RUN: tl.constexpr, WINDOW: tl.constexpr, TRIM: tl.constexpr = False,
               SHARED: tl.constexpr = False):
    """One chunk of `_scan_bwd_kernel`'s reverse walk (its two passes, below), from the gradient R reaching the chunk's
    end; returns R at its start and the sums dA, dD, dbias with the chunk's share added. WINDOW: the chunk holds tokens
    outside the row's own [lo, hi) (a packed row's first or last chunk), which pass as a decay of 1 with no input and
    no dy and store nothing; without it the chunk runs the dense batch's code, whose masks stay whole tiles (vector
    stores, no per-token compares). TRIM (with WINDOW): the tiles wholly outside [lo, hi) are skipped (they would
    change nothing), only the tiles from the one holding lo to the one holding hi - 1 run."""
    TPC: tl.constexpr = CHUNK // TILE
    NPAD: tl.constexpr = SLOTS * NL
    LN2: tl.constexpr = 0.6931471805599453
    TPL: tl.constexpr = TILE // NL  # (SHARED: each lane's share of a tile's tokens)
    k_lo = 0  # the chunk's tiles that run, [k_lo, k_hi)
    k_hi = TPC
    if WINDOW and TRIM:  # (k_hi > k_lo: a row's chunks start before its end, c0 < hi, and lo < hi. A guard saying so
        # moved two spilled pointers' loads into the head of `_segment_grad`'s tile loop, triton 3.6 sm_90 offline)
        k_lo = tl.maximum(lo - c0, 0) // TILE
        k_hi = tl.minimum(tl.cdiv(hi - c0, TILE), TPC)
    # pass 1: the state entering every tile of the chunk, from the one stored entering the chunk, into
    # this program's scratch (in L1 or L2: 2 KB per warp and tile at dstate 16)
    tl.debug_barrier()  # the previous chunk's pass 2 has read the scratch
    next_in_1 = 0  # (the tiles' inputs loaded ahead, TILE_AHEAD: for pass 1 and for pass 2)
    next_in_2 = 0
    if TILE_AHEAD:  # pass 1's first tile, and pass 2's (the chunk's last), load before pass 1's work
        next_in_1 = _raw_tile(u_base, delta_base, do_base, z_base, c0 + k_lo * TILE, o_t, m_d, seqlen, stride_u_l,
                              stride_delta_l, stride_do_l, stride_z_l, False, False)
        next_in_2 = _raw_tile(u_base, delta_base, do_base, z_base, c0 + (k_hi - 1) * TILE, o_t, m_d, seqlen,
                              stride_u_l, stride_delta_l, stride_do_l, stride_z_l, True, HAS_Z)
    p_ck = ckpt_ptr + (i_b * n_ckpt + c) * state_size + o_d[None, :] * dstate
    x = ()
    m_ck = rows[0] >= 0
    if WINDOW:  # a chunk that starts before the row's tokens enters from zero
        m_ck = (rows[0] * 0 + c0) >= lo
    for j in tl.static_range(SLOTS):
        x = x + (tl.load(p_ck + _state_pos(rows[j], CK, CK_RUN), mask=(rows[j] < dstate) & m_d[None, :] & m_ck,
                         other=0.0).to(ACC),)
    for k in range(k_lo, k_hi - 1):  # (the last tile's end state is not needed)
        p_sc = scratch_base + k * (NPAD * BLOCK_D)
        for j in tl.static_range(SLOTS):
            tl.store(p_sc + rows[j] * BLOCK_D, x[j])
        t0 = c0 + k * TILE
        raw, u, _, _ = _tile_now(u_base, delta_base, do_base, z_base, t0, next_in_1, o_t, m_d, seqlen, stride_u_l,
                                 stride_delta_l, stride_do_l, stride_z_l, False, False, TILE_AHEAD)
        t, m_dt = _tile_mask(t0, o_t, m_d, seqlen)
        if WINDOW:  # the tokens before the row's pass as a decay of 1 with no input
            m_dt = m_dt & (t >= lo)[None, :]
        u = u.to(ACC)
        dl = tl.where(m_dt, process_delta(raw.to(ACC), bias[:, None], HAS_DELTA_BIAS, DELTA_SOFTPLUS, FAST), 0.0)
        if TILE_AHEAD:  # the next tile's loads now, to arrive while this tile's arithmetic runs
            next_in_1 = _raw_tile(u_base, delta_base, do_base, z_base, t0 + TILE, o_t, m_d, seqlen, stride_u_l,
                                  stride_delta_l, stride_do_l, stride_z_l, False, False)
        if SHARED:  # (the tile's per-token values computed once a channel: see pass 2)
            dl_c = _lane_columns(_lane_tokens(dl, NL, BLOCK_D, TPL), rows[0], NL, BLOCK_D, TPL)
            du_c = _lane_columns(_lane_tokens(dl * u, NL, BLOCK_D, TPL), rows[0], NL, BLOCK_D, TPL)
        else:
            dl_c = columns(dl, BLOCK_D, TILE)
            du_c = columns(dl * u, BLOCK_D, TILE)
        keeps = dl_c
        if IS_VARLEN:
            keeps, _, _ = _tokens(seq_ptr, t0, seqlen, ACC, TILE)
        p_bc = bc_base + (t0 // TILE) * (2 * NPAD * TILE)
        if WINDOW:  # (an edge chunk: other sequences' tokens leave the state as it is, whatever their inputs hold)
            x = _advance(x, p_bc, rows, dl_c, du_c, keeps, A2, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN, BC_AHEAD,
                         _window_tokens(t0, lo, hi, TILE), True)
        else:
            x = _advance(x, p_bc, rows, dl_c, du_c, keeps, A2, NL, BLOCK_D, SLOTS, TILE, IS_VARLEN, BC_AHEAD)
    p_sc = scratch_base + (k_hi - 1) * (NPAD * BLOCK_D)
    for j in tl.static_range(SLOTS):
        tl.store(p_sc + rows[j] * BLOCK_D, x[j])
    tl.debug_barrier()  # (should a layout put a value's store and load on different threads)

    # pass 2: the tiles in reverse, each from the state entering it
    for kt_rev in range(TPC - k_hi, TPC - k_lo):
        kt = TPC - 1 - kt_rev
        p_sc = scratch_base + kt * (NPAD * BLOCK_D)
        x = ()
        for j in tl.static_range(SLOTS):
            x = x + (tl.load(p_sc + rows[j] * BLOCK_D),)
        t0 = c0 + kt * TILE
        raw, u, dout, zt = _tile_now(u_base, delta_base, do_base, z_base, t0, next_in_2, o_t, m_d, seqlen,
                                     stride_u_l, stride_delta_l, stride_do_l, stride_z_l, True, HAS_Z, TILE_AHEAD)
        t, m_dt = _tile_mask(t0, o_t, m_d, seqlen)
        m_t = _row_tokens(t, seqlen, lo, hi, WINDOW)
        raw = raw.to(ACC)
        u = u.to(ACC)
        dout = dout.to(ACC)
        if WINDOW:  # the row's own tokens: the others get no dy and no delta (so add nothing to dA, dD, ddelta_bias)
            # and store nothing. (A neighbour's last-state gradient may still enter at its last token: it reaches
            # no token of this row's, the sequence boundary's decay being 0, and adds to nothing kept.)
            m_dt = m_dt & m_t[None, :]
            dout = tl.where(m_dt, dout, 0.0)
        if HAS_Z:
            zt = zt.to(ACC)
        dl = tl.where(m_dt, process_delta(raw, bias[:, None], HAS_DELTA_BIAS, DELTA_SOFTPLUS, FAST), 0.0)
        if TILE_AHEAD:  # the next tile's loads now (the chunk's first tile loads itself again: the next chunk's
            # tiles load before its pass 1)
            next_in_2 = _raw_tile(u_base, delta_base, do_base, z_base, t0 - (kt > k_lo) * TILE, o_t, m_d, seqlen,
                                  stride_u_l, stride_delta_l, stride_do_l, stride_z_l, True, HAS_Z)
        if HAS_Z:
            sz = tl.sigmoid(zt)
            dy = dout * zt * sz
        else:
            dy = dout
        if SHARED:
            # the tile's per-token values (softplus, the gate's sigmoid, dy) computed by each lane for its share of the
            # tokens and handed to the channel's other lanes (`_lane_columns`), where Triton would compute them on
            # every lane in the layout the columns want; the output work after the slots likewise (below)
            dl_c = _lane_columns(_lane_tokens(dl, NL, BLOCK_D, TPL), rows[0], NL, BLOCK_D, TPL)
            du_c = _lane_columns(_lane_tokens(dl * u, NL, BLOCK_D, TPL), rows[0], NL, BLOCK_D, TPL)
            dy_c = _lane_columns(_lane_tokens(dy, NL, BLOCK_D, TPL), rows[0], NL, BLOCK_D, TPL)
        else:
            dl_c = columns(dl, BLOCK_D, TILE)
            du_c = columns(dl * u, BLOCK_D, TILE)
            dy_c = columns(dy, BLOCK_D, TILE)
        if IS_VARLEN:
            keeps, ends, seqs = _tokens(seq_ptr, t0, seqlen, ACC, TILE)
        window = 0
        if WINDOW:
            window = _window_tokens(t0, lo, hi, TILE)
        p_bc = bc_base + (t0 // TILE) * (2 * NPAD * TILE)
        acc_b = ()  # per token: sum over the slots of dh B
        acc_a = ()  # per token: sum over the slots of A2 dh a h_{t-1}
        acc_y = ()  # per token: sum over the slots of C h
        for kk in tl.static_range(TILE):
            acc_b = acc_b + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
            acc_a = acc_a + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
            if HAS_Z:
                acc_y = acc_y + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
        Rn = ()
        dAn = ()
        next_rows = _slot_first(p_bc, rows, NL, BLOCK_D, SLOTS, TILE, True, BC_AHEAD)
        for j in tl.static_range(SLOTS):
            rows_j, next_rows = _slot_step(p_bc, rows, j, next_rows, NL, BLOCK_D, SLOTS, TILE, True, BC_AHEAD)
            b_j, c_j = rows_j
            h0 = x[j]
            xj = h0
            hs = ()
            ds = ()
            for kk in tl.static_range(TILE):
                a = tl.exp2(dl_c[kk][None, :] * A2[j])
                if IS_VARLEN:  # (the decay at a sequence's first token is 0: by selects, below, as 0 x NaN is NaN)
                    xj = tl.where(keeps[kk] != 0, xj, 0.0)
                if WINDOW:
                    xj = tl.where(window[kk], a * xj + du_c[kk][None, :] * b_j[kk], xj)
                else:
                    xj = a * xj + du_c[kk][None, :] * b_j[kk]
                hs = hs + (xj,)
                ds = ds + (a,)
            r = R[j]
            dAj = dA[j]
            cb = ()
            ca = ()
            cy = ()
            gB = ()
            gC = ()
            for kr in tl.static_range(TILE - 1, -1, -1):
                if WINDOW:  # (another sequence's token: a decay of 1 and nothing added, whatever its C holds)
                    dh = tl.where(window[kr], r + c_j[kr] * dy_c[kr][None, :], r)
                else:
                    dh = r + c_j[kr] * dy_c[kr][None, :]
                if IS_VARLEN:
                    if HAS_DLAST:  # a sequence's last state is read at its last token
                        dh += _dlast_at(dlast_ptr, seqs[kr], ends[kr], state_size, dstate, o_d, m_d, rows[j], ACC)
                if kr > 0:
                    h_prev = hs[kr - 1]
                else:
                    h_prev = h0
                q = dh * (ds[kr] * h_prev)
                if IS_VARLEN:  # (a sequence's first token: its decay is 0, and the state before is another's)
                    q = tl.where(keeps[kr] != 0, q, 0.0)
                cb = (dh * b_j[kr],) + cb
                ca = (A2[j] * q,) + ca
                if HAS_Z:
                    cy = (c_j[kr] * hs[kr],) + cy
                gB = (dh * du_c[kr][None, :],) + gB
                gC = (dy_c[kr][None, :] * hs[kr],) + gC
                dAj += dl_c[kr][None, :] * q
                r = ds[kr] * dh
                if IS_VARLEN:  # nothing reaches the sequence before, even a NaN of this one's
                    r = tl.where(keeps[kr] != 0, r, 0.0)
            Rn = Rn + (r,)
            dAn = dAn + (dAj,)
            nb = ()
            na = ()
            ny = ()
            for kk in tl.static_range(TILE):
                nb = nb + (acc_b[kk] + cb[kk],)
                na = na + (acc_a[kk] + ca[kk],)
                if HAS_Z:
                    ny = ny + (acc_y[kk] + cy[kk],)
            acc_b = nb
            acc_a = na
            acc_y = ny
            # dB, dC of this slot's states: summed over the block's channels
            sB = tl.sum(_join2(gB, NL, BLOCK_D, TILE), axis=1)  # [NL, TILE]
            sC = tl.sum(_join2(gC, NL, BLOCK_D, TILE), axis=1)
            # (the [NL, TILE] sums held by every channel's thread, moved to one a thread through shared memory for
            # the stores or atomics)
            p_dbc = dbc_base + rows[j] * seqlen + t[None, :]
            m_bc = (rows[j] < dstate) & m_t[None, :]
            if DETERMINISTIC:
                tl.store(dB_ptr + p_dbc, sB, mask=m_bc)
                tl.store(dC_ptr + p_dbc, sC, mask=m_bc)
            else:
                tl.atomic_add(dB_ptr + p_dbc, sB, mask=m_bc, sem="relaxed")
                tl.atomic_add(dC_ptr + p_dbc, sC, mask=m_bc, sem="relaxed")
        R = Rn
        dA = dAn
        sb = ()
        sa = ()
        sy = ()
        for kk in tl.static_range(TILE):
            sb = sb + (tl.sum(acc_b[kk], axis=0),)
            sa = sa + (tl.sum(acc_a[kk], axis=0),)
            if HAS_Z:
                sy = sy + (tl.sum(acc_y[kk], axis=0),)
        if SHARED:  # lane g: du, ddelta, dz of tokens g TPL .. g TPL + TPL - 1, its shares of dD and ddelta_bias
            lane = rows[0]  # [NL, 1]
            sb3 = _lane_share(sb, lane, NL, BLOCK_D, TPL)
            t3 = t0 + lane[:, :, None] * TPL + tl.arange(0, TPL)[None, None, :]  # [NL, 1, TPL]
            m3 = m_d[None, :, None] & _row_tokens(t3, seqlen, lo, hi, WINDOW)
            u3 = _lane_tokens(u, NL, BLOCK_D, TPL)
            du3 = _lane_tokens(dl, NL, BLOCK_D, TPL) * sb3
            ddl3 = u3 * sb3 + _lane_share(sa, lane, NL, BLOCK_D, TPL) * LN2
            if HAS_D:
                dy3 = _lane_tokens(dy, NL, BLOCK_D, TPL)
                du3 += Dv[None, :, None] * dy3
                dD += tl.sum(tl.sum(dy3 * u3, axis=2), axis=0)
            if DELTA_SOFTPLUS:
                ddl3 = ddl3 * tl.sigmoid(_lane_tokens(raw, NL, BLOCK_D, TPL) + bias[None, :, None])
            ddl3 = tl.where(m3, ddl3, 0.0)
            dbias += tl.sum(tl.sum(ddl3, axis=2), axis=0)
            p3 = out_base[None, :, :] + t3 * stride_o_l
            tl.store(du_ptr + p3, du3.to(du_ptr.dtype.element_ty), mask=m3)
            tl.store(ddelta_ptr + p3, ddl3.to(ddelta_ptr.dtype.element_ty), mask=m3)
            if HAS_Z:
                ypre3 = _lane_share(sy, lane, NL, BLOCK_D, TPL)
                if HAS_D:
                    ypre3 += Dv[None, :, None] * u3
                dz3 = _lane_tokens(dout, NL, BLOCK_D, TPL) * ypre3 * silu_grad(_lane_tokens(zt, NL, BLOCK_D, TPL),
                                                                                 _lane_tokens(sz, NL, BLOCK_D, TPL))
                tl.store(dz_ptr + p3, dz3.to(dz_ptr.dtype.element_ty), mask=m3)
        else:
            dhB = join_columns(sb, BLOCK_D, TILE)
            du = dl * dhB
            ddl = u * dhB + join_columns(sa, BLOCK_D, TILE) * LN2
            if HAS_D:
                du += Dv[:, None] * dy
                dD += tl.sum(dy * u, axis=1)
            if DELTA_SOFTPLUS:
                ddl = ddl * tl.sigmoid(raw + bias[:, None])
            ddl = tl.where(m_dt, ddl, 0.0)
            dbias += tl.sum(ddl, axis=1)
            p_out = out_base + t[None, :] * stride_o_l
            tl.store(du_ptr + p_out, du.to(du_ptr.dtype.element_ty), mask=m_dt)
            tl.store(ddelta_ptr + p_out, ddl.to(ddelta_ptr.dtype.element_ty), mask=m_dt)
            if HAS_Z:
                ypre = join_columns(sy, BLOCK_D, TILE)
                if HAS_D:
                    ypre += Dv[:, None] * u
                dz = dout * ypre * silu_grad(zt, sz)
                tl.store(dz_ptr + p_out, dz.to(dz_ptr.dtype.element_ty), mask=m_dt)
    return R, dA, dD, dbias


@triton.jit
def _scan_bwd_kernel(
    u_ptr, delta_ptr, A_ptr, bc_ptr, D_ptr, z_ptr, delta_bias_ptr, seq_ptr, ckpt_ptr, dout_ptr, dlast_ptr,
    du_ptr, ddelta_ptr, dz_ptr, dA_ptr, dB_ptr, dC_ptr, dD_ptr, dbias_ptr, scratch_ptr, counter_ptr, flag_ptr, slot_ptr,
    rows_ptr, batch, dim, dstate, seqlen, dims_per_group, ngroups, n_tiles, n_ckpt, blocks_per_group, n_seg, seg_len,
    n_programs,
    stride_u_b, stride_u_d, stride_u_l,
    stride_delta_b, stride_delta_d, stride_delta_l,
    stride_A_d, stride_A_n,
    stride_z_b, stride_z_d, stride_z_l,
    stride_do_b, stride_do_d, stride_do_l,
    stride_o_b, stride_o_d, stride_o_l,
    BLOCK_D: tl.constexpr, NL: tl.constexpr, SLOTS: tl.constexpr, TILE: tl.constexpr, CHUNK: tl.constexpr,
    FAST: tl.constexpr, HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr,
    DELTA_SOFTPLUS: tl.constexpr, IS_VARLEN: tl.constexpr, HAS_DLAST: tl.constexpr, DETERMINISTIC: tl.constexpr,
    SEGMENTS: tl.constexpr, ACC: tl.constexpr, BC_AHEAD: tl.constexpr = False, TILE_AHEAD: tl.constexpr = False,
    CK: tl.constexpr = 1, CK_RUN: tl.constexpr = 0, ROWS: tl.constexpr = False, INNER: tl.constexpr = True,
    ALIGN_IN: tl.constexpr = 1, ALIGN_OUT: tl.constexpr = 1, TRIM: tl.constexpr = False, CLEAN: tl.constexpr = False,
    SHARED_TOKENS: tl.constexpr = False,
):
    """The forward's layout run backwards: a program owns BLOCK_D channels of one batch row, each
    split over NL lanes holding SLOTS states, and walks the sequence from its end, one chunk of CHUNK
    tokens (the spacing of the stored states) after another. Per chunk: pass 1 recomputes, from the
    stored entering state, the state at the start of every TILE tokens (into a per-program scratch,
    (batch, programs, CHUNK // TILE, SLOTS * NL, BLOCK_D) fp32); pass 2 takes the
    tiles in reverse, and per slot recomputes the tile's TILE states and decays, then runs the
    gradient backwards through them,

        dh_t = r + C_t dy_t,   r <- a_t dh_t   (r: the gradient reaching h_{t-1}),

    accumulating per token sum_n dh B (du, ddelta), sum_n A dh a h_{t-1} (ddelta) and sum_n C h
    (y before the gate, for dz), per state dA; dB and dC are summed over the program's channels and
    added to fp32 buffers (atomics, or one slice per block of channels in deterministic mode). dA,
    dD, ddelta_bias go to one fp32 slice per batch row (and segment).

    SEGMENTS: the sequence is cut into n_seg segments of seg_len tokens (a multiple of CHUNK), one
    program each, tickets from the last segment to the first. A program first sums the gradient its own
    tokens send to the state entering its segment (`_segment_grad`), waits for the gradient reaching its
    segment's end (published by the program of the next segment), publishes q * that + own for the
    previous segment at once, then runs the reverse walk over its own chunks from there.
    ROWS (packed sequences, with SEGMENTS): the programs are the rows of `varlen_rows` (whole chunks, tickets from
    the last row), each a dense batch row's walk over its own span of sequences; a long sequence's segments hand the
    gradient on as above. A row's tokens outside its own [lo, hi) (its first and last chunks' neighbours) pass as a
    decay of 1 with no input and no dy, and store nothing: their gradients are the neighbouring rows'. Rows shared
    by short sequences read the per-token sequence index (IS_VARLEN); rows of one sequence need none (IS_VARLEN
    off): a chunk that starts before the row's tokens enters from zero, and the sequence's last-state gradient
    enters at the row's end. Only a row's first and last chunk take the window's masks (`_bwd_chunk`, INNER): the
    others run the dense batch's code. CLEAN (with IS_VARLEN): in rows shared by short sequences too, a chunk inside
    the row's tokens that no sequence starts (or, with HAS_DLAST, ends) in runs the dense code (`_one_sequence`); the
    others take the window's and the sequence index's masks.
    ALIGN_IN, ALIGN_OUT (`row_align`): what the rows of u, delta, z, dout, and of du, ddelta, dz and seqlen, are
    known multiples of. du, ddelta and dz share one layout (stride_o_*: u's, `rows_like`)."""
    seqlen = _aligned_length(seqlen, ALIGN_OUT)
    SHARED: tl.constexpr = SHARED_TOKENS and NL > 1 and TILE % NL == 0  # (`_bwd_chunk`'s SHARED)
    n_blocks = tl.cdiv(dim, BLOCK_D)
    lo = 0  # (ROWS: the row's own tokens, [lo, hi))
    hi = seqlen
    if ROWS:
        ticket = take_ticket(counter_ptr, n_programs)
        i_d = ticket % n_blocks
        # rows are segment-major: taken from the last, a row's next segment (a later row) holds an earlier ticket
        i_r = (n_programs // n_blocks - 1 - ticket // n_blocks).to(tl.int64)
        entry = rows_ptr + i_r * 7
        t_begin = tl.multiple_of(tl.load(entry).to(tl.int32), CHUNK)
        t_end = tl.load(entry + 1).to(tl.int32)
        lo = tl.load(entry + 2).to(tl.int32)
        hi = tl.load(entry + 3).to(tl.int32)
        prev = tl.load(entry + 4)
        is_last = tl.load(entry + 5) == 0  # (the last segment of its sequence)
        i_seq = tl.load(entry + 6)  # (its sequence, where the row holds one)
        i_b = i_r * 0
    elif SEGMENTS:
        i_d, i_b, seg, t_begin, t_end = _segment_of(counter_ptr, n_programs, n_blocks, batch, n_seg, seg_len, seqlen,
                                                    True)
    else:  # (spelled out here: triton 3.6 does not compile a helper that returns early with ints)
        i_d = tl.program_id(0)
        i_b = tl.program_id(1).to(tl.int64)
        seg = 0
        t_begin = 0
        t_end = seqlen
    o_d = (i_d * BLOCK_D + tl.arange(0, BLOCK_D)).to(tl.int64)
    o_g = tl.arange(0, NL)
    o_t = tl.arange(0, TILE)
    m_d = o_d < dim
    g = ((i_d * BLOCK_D) // dims_per_group).to(tl.int64)  # the block's channels share one group
    TPC: tl.constexpr = CHUNK // TILE
    NPAD: tl.constexpr = SLOTS * NL
    INNER_VARLEN: tl.constexpr = IS_VARLEN and not CLEAN  # (ROWS: the inner chunks' form)
    state_size = dim * dstate

    bias = tl.zeros((BLOCK_D,), dtype=ACC)
    if HAS_DELTA_BIAS:
        bias = tl.load(delta_bias_ptr + o_d, mask=m_d, other=0.0).to(ACC)
    Dv = bias  # (unused without D)
    if HAS_D:
        Dv = tl.load(D_ptr + o_d, mask=m_d, other=0.0).to(ACC)
    A2 = ()
    rows = ()  # per slot: the states n of the NL lanes, [NL, 1]
    R = ()  # per slot: the gradient reaching the state before the token being processed
    dA = ()
    for j in tl.static_range(SLOTS):
        n = (j * NL + o_g)[:, None]
        m_n = (n < dstate) & m_d[None, :]
        rows = rows + (n,)
        A2 = A2 + (tl.load(A_ptr + o_d[None, :] * stride_A_d + n * stride_A_n, mask=m_n, other=0.0).to(ACC) * LOG2E,)
        if HAS_DLAST and not IS_VARLEN:  # the last state's gradient enters at the last token
            if ROWS:  # (one sequence a row: tokens after its end pass it back unchanged)
                m_last = m_n & ((n * 0 + is_last.to(tl.int32)) != 0)
                R = R + (tl.load(dlast_ptr + i_seq * state_size + o_d[None, :] * dstate + n, mask=m_last,
                                 other=0.0).to(ACC),)
            else:
                m_last = m_n & ((n * 0 + seg) == n_seg - 1)
                R = R + (tl.load(dlast_ptr + i_b * state_size + o_d[None, :] * dstate + n, mask=m_last,
                                 other=0.0).to(ACC),)
        else:
            R = R + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
        dA = dA + (tl.zeros((NL, BLOCK_D), dtype=ACC),)
    dD = tl.zeros((BLOCK_D,), dtype=ACC)
    dbias = tl.zeros((BLOCK_D,), dtype=ACC)

    u_base = _row_base(u_ptr, i_b, o_d, stride_u_b, stride_u_d, ALIGN_IN)
    delta_base = _row_base(delta_ptr, i_b, o_d, stride_delta_b, stride_delta_d, ALIGN_IN)
    z_base = _row_base(z_ptr, i_b, o_d, stride_z_b, stride_z_d, ALIGN_IN)
    do_base = _row_base(dout_ptr, i_b, o_d, stride_do_b, stride_do_d, ALIGN_IN)
    out_base = _row_offset(i_b, o_d, stride_o_b, stride_o_d, ALIGN_OUT)  # du, ddelta, dz (u's layout: `rows_like`)
    bc_base = bc_ptr + (i_b * ngroups + g) * n_tiles * (2 * NPAD * TILE) + o_d[None, :] * 0
    part = 0
    if DETERMINISTIC:
        part = i_d % blocks_per_group
    dbc_base = ((part * batch + i_b) * ngroups + g) * dstate * seqlen  # dB, dC: (parts, batch, ngroups, dstate, seqlen)
    # (batch * n_seg, blocks, TPC, NPAD, BLOCK_D): the states entering the tiles of the current chunk
    if ROWS:
        row = i_r  # this program's slice of dA, dD, ddelta_bias, and of the scratch
    else:
        row = i_b * n_seg + seg
    scratch_base = (scratch_ptr + ((row * n_blocks + i_d) * TPC) * (NPAD * BLOCK_D)
                    + tl.arange(0, BLOCK_D)[None, :])
    if SEGMENTS:
        if ROWS:  # the slot of a row holds the gradient reaching its end, filled by its sequence's next segment
            chain_in = row * n_blocks + i_d
            chain_out = prev * n_blocks + i_d
            has_prev = prev >= 0
            has_later = is_last == 0
        else:  # the slot of a segment holds the gradient reaching its start, read by the previous segment
            chain_out = row * n_blocks + i_d
            chain_in = chain_out + n_blocks
            has_prev = seg > 0
            has_later = seg < n_seg - 1
        # the gradient the segment's own tokens send to the state entering it (not needed by the first)
        own, carry, carried = _segment_grad(delta_base, do_base, z_base, bc_base, seq_ptr, dlast_ptr, t_begin,
                                            tl.where(has_prev, t_end, t_begin), seqlen, n_tiles, state_size, dstate,
                                            o_t, o_d, m_d, bias, A2, rows, stride_delta_l, stride_do_l, stride_z_l, hi,
                                            BLOCK_D, NL, SLOTS, TILE, FAST, HAS_Z, HAS_DELTA_BIAS, DELTA_SOFTPLUS,
                                            IS_VARLEN, HAS_DLAST, ACC, ROWS)
        # the gradient reaching the segment's end, and at once the one reaching its start for the previous
        if has_later:
            _wait(flag_ptr, chain_in)
        later = _receive(slot_ptr, chain_in, rows, (o_g[:, None] * 0 + has_later.to(tl.int32)) > 0, NL, BLOCK_D,
                         SLOTS)
        Rs = ()
        for j in tl.static_range(SLOTS):
            Rs = Rs + (R[j] + later[j],)
        R = Rs
        if has_prev:
            _publish(flag_ptr, slot_ptr, chain_out, own, carry, R, carried, rows, NL, BLOCK_D, SLOTS)

    c_first = t_begin // CHUNK
    c_end = tl.cdiv(t_end, CHUNK)
    for c_rev in range(0, c_end - c_first):
        c = c_end - 1 - c_rev
        c0 = c * CHUNK
        if FAST:  # the previous chunk's rows, tiles of B and C and entering state into L1 while this one runs
            if c > c_first:
                _prefetch_values(bc_base + (c0 // TILE - TPC) * (2 * NPAD * TILE), TPC * 2 * NPAD * TILE, NL, BLOCK_D)
                prefetch(u_base + (c0 - CHUNK) * stride_u_l, "L1")
                prefetch(delta_base + (c0 - CHUNK) * stride_delta_l, "L1")
                prefetch(do_base + (c0 - CHUNK) * stride_do_l, "L1")
                if HAS_Z:
                    prefetch(z_base + (c0 - CHUNK) * stride_z_l, "L1")
                prefetch(ckpt_ptr + (i_b * n_ckpt + c - 1) * state_size + o_d[:, None] * dstate, "L1")
        if ROWS:  # a row's first and last chunk hold its neighbours' tokens: only they take the window's masks
            inner = (c0 >= lo) & (c0 + CHUNK <= hi)
            if IS_VARLEN and CLEAN:  # (rows shared by short sequences: a chunk inside one sequence too)
                inner = inner & _one_sequence(seq_ptr, c0, seqlen, CHUNK, HAS_DLAST)
            if not INNER:  # (A/B: every chunk with the masks)
                inner = c0 < 0
            if inner:
                R, dA, dD, dbias = _bwd_chunk(c, c0, lo, hi, R, dA, dD, dbias, A2, rows, bias, Dv,
                    u_base, delta_base, do_base, z_base, bc_base, scratch_base, ckpt_ptr, seq_ptr,
                    dlast_ptr, du_ptr, ddelta_ptr, dz_ptr, dB_ptr, dC_ptr, out_base, dbc_base, i_b,
                    n_ckpt, seqlen, dstate, state_size, o_d, o_t, m_d, stride_u_l, stride_delta_l,
                    stride_do_l, stride_z_l, stride_o_l, BLOCK_D, NL, SLOTS, TILE, CHUNK, FAST, HAS_D, HAS_Z,
                    HAS_DELTA_BIAS, DELTA_SOFTPLUS, INNER_VARLEN, HAS_DLAST, DETERMINISTIC, ACC, BC_AHEAD,
                    TILE_AHEAD, CK, CK_RUN, False, False, SHARED)
            else:
                R, dA, dD, dbias = _bwd_chunk(c, c0, lo, hi, R, dA, dD, dbias, A2, rows, bias, Dv,
                    u_base, delta_base, do_base, z_base, bc_base, scratch_base, ckpt_ptr, seq_ptr,
                    dlast_ptr, du_ptr, ddelta_ptr, dz_ptr, dB_ptr, dC_ptr, out_base, dbc_base, i_b,
                    n_ckpt, seqlen, dstate, state_size, o_d, o_t, m_d, stride_u_l, stride_delta_l,
                    stride_do_l, stride_z_l, stride_o_l, BLOCK_D, NL, SLOTS, TILE, CHUNK, FAST, HAS_D, HAS_Z,
                    HAS_DELTA_BIAS, DELTA_SOFTPLUS, IS_VARLEN, HAS_DLAST, DETERMINISTIC, ACC, BC_AHEAD,
                    TILE_AHEAD, CK, CK_RUN, True, TRIM, SHARED)
        else:
            R, dA, dD, dbias = _bwd_chunk(c, c0, lo, hi, R, dA, dD, dbias, A2, rows, bias, Dv, u_base,
                delta_base, do_base, z_base, bc_base, scratch_base, ckpt_ptr, seq_ptr, dlast_ptr, du_ptr,
                ddelta_ptr, dz_ptr, dB_ptr, dC_ptr, out_base, dbc_base, i_b, n_ckpt, seqlen, dstate,
                state_size, o_d, o_t, m_d, stride_u_l, stride_delta_l, stride_do_l, stride_z_l, stride_o_l, BLOCK_D,
                NL, SLOTS, TILE, CHUNK, FAST, HAS_D, HAS_Z, HAS_DELTA_BIAS, DELTA_SOFTPLUS, IS_VARLEN,
                HAS_DLAST, DETERMINISTIC, ACC, BC_AHEAD, TILE_AHEAD, CK, CK_RUN, False, False, SHARED)

    # dA, dD, ddelta_bias: one slice per batch row and segment, summed in order by the caller
    _store_states(dA_ptr + row * state_size + o_d[None, :] * dstate, rows, dA, m_d, dstate, NL, BLOCK_D, SLOTS, 1, 0)
    if HAS_D:
        tl.store(dD_ptr + row * dim + o_d, dD, mask=m_d)
    if HAS_DELTA_BIAS:
        tl.store(dbias_ptr + row * dim + o_d, dbias, mask=m_d)


@dataclass(frozen=True)
class ForwardConfig:
    block_d: int    # channels per program
    lanes: int      # lanes per channel, each holding cdiv(dstate, lanes) of its states
    tile: int       # tokens per load (1, 2, 4 or 8)
    num_warps: int
    prefetch_bc: int = 0  # B and C of the next tile are loaded into registers ahead when slots * tile is at most this
    prefetch_tiles: int = 2  # on the GPU, B and C this many tiles ahead are prefetched into L1
    segment: int = 0  # tokens per program along the sequence (a multiple of tile); 0: the whole sequence
    maxnreg: int | None = None  # a register cap for ptxas (GPU): the registers it may use (FWD_MAXNREG)
    hand_late: bool = False  # segments hand their state on after the output pass (no first pass): where the
                             # channels fill the GPU already and segments only even out its waves

    def __post_init__(self):
        _check_layout(self)
        _check_segment(self, self.tile)
        if not isinstance(self.hand_late, bool):
            raise ValueError(f"ForwardConfig.hand_late must be a bool, got {self.hand_late!r}")
        if self.hand_late and not self.segment:
            raise ValueError("ForwardConfig.hand_late needs segments (segment > 0): it says how they hand on")
        for name in ("prefetch_bc", "prefetch_tiles"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise ValueError(f"ForwardConfig.{name} must be an int >= 0, got {v!r}")


def _check_layout(cfg) -> None:
    """The fields both configurations share: powers of two where the kernels split tensors by them,
    a tile the column splits handle, a register cap ptxas accepts."""
    kind = type(cfg).__name__
    for name in ("block_d", "lanes", "num_warps"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{kind}.{name} must be a power of two >= 1, got {v!r}")
    if cfg.lanes > 32:
        raise ValueError(f"{kind}.lanes must be at most 32 (the lanes of one warp), got {cfg.lanes}")
    if cfg.tile not in (1, 2, 4, 8):
        raise ValueError(f"{kind}.tile must be 1, 2, 4 or 8 tokens, got {cfg.tile!r}")
    check_register_cap(kind, getattr(cfg, "maxnreg", None))


def _check_segment(cfg, unit: int) -> None:
    if not isinstance(cfg.segment, int) or cfg.segment < 0 or cfg.segment % unit:
        raise ValueError(f"{type(cfg).__name__}.segment must be 0 (the whole sequence) or a positive multiple of "
                         f"{unit} tokens, got {cfg.segment!r}")


@dataclass(frozen=True)
class BackwardConfig:
    block_d: int    # channels per program
    lanes: int      # lanes per channel, each holding cdiv(dstate, lanes) of its states
    tile: int       # tokens per load (1, 2, 4 or 8)
    chunk: int      # tokens between the states the forward stores (a multiple of tile)
    num_warps: int
    maxnreg: int | None = None  # a register cap for ptxas (GPU): fewer registers, more resident warps
    segment: int = 0  # tokens per program along the sequence (a multiple of chunk); 0: the whole sequence

    def __post_init__(self):
        _check_layout(self)
        if not isinstance(self.chunk, int) or self.chunk < 1 or self.chunk & (self.chunk - 1):
            raise ValueError(f"BackwardConfig.chunk must be a power of two >= 1 (tokens between stored states), "
                             f"got {self.chunk!r}")
        _check_segment(self, self.chunk)


def _check_groups(cfg, dim: int, ngroups: int) -> None:
    """A program reads the B and C of its first channel's group for all its channels: a configuration
    given by hand must not put two groups in one block (the picked ones never do)."""
    if ngroups > 1 and (dim // ngroups) % cfg.block_d:
        raise ValueError(f"{type(cfg).__name__}.block_d ({cfg.block_d}) must divide the channels per group "
                         f"({dim // ngroups}: dim {dim} over {ngroups} groups of B and C)")


def _fit_block(target: int, dim: int, dims_per_group: int, ngroups: int) -> int:
    """The largest power of two <= target whose blocks never straddle two groups of B and C."""
    block = max(1, min(target, _runtime.next_power_of_2(dim)))
    while ngroups > 1 and dims_per_group % block:
        block //= 2
    return block


# The backward's segments at dstate <= 32. A full SM of backward programs runs at a fixed pace (8 warps, waiting on
# their dependency chains: twenty-third session), so its time follows the tokens; a segment's extra pass costs ~15 %,
# and a grid whose last wave of resident programs (BWD_RESIDENT a SM at 255 registers) is mostly empty pays for that
# wave at the few programs' pace. So: segments where the channels' grid fills under BWD_FILL of its last wave (under one
# wave: of the one) and the sequence has at least BWD_SEGMENTS_FROM tokens; BWD_SEGMENT tokens, halved (to BWD_SHORTEST
# at least) while the segments' grid fills under BWD_SEGMENTED_FILL of its last wave (a shorter segment costs a little,
# 1-3 %, so it is taken for a smaller tail than segments at all), doubled while the grid would pass BWD_SEGMENT_WAVES
# waves (which bounds the hand-over slots and the per-segment dA rows to ~0.5 KB a program). H200, forty-sixth session
# (benchmarks/notes/selective_scan.md), 2.8B shape unless said, time against the rounds model's pick this rule replaced
# (whole waves of segments of >= 1024 tokens, or none): 2x16K (none, 1.21 waves) 0.76, 2x4K 0.76, 2x2K 0.76 (512), 1x2K
# 0.93 (512), 1x4K 0.95, 1x32K 0.996 (512: 0.989, 128: 1.026), 1x128K 1.015, dim 1536 1x8K 0.92, 4x2K 0.98 (512), 8x2K
# 0.92 (512), 1x32K 1.016. Left alone, measured: 3x8K (0.91 of its second wave: segments 1.10), 4x8K (0.81: 1.00), 8x2K
# (0.97: 1.14). Short sequences (calls 2, 6-8): 1x1K none 0.42 ms, two segments of 512 1.17x, of 128 0.88x on the median
# of three runs (forty-seventh session; 0.88x and 1.06x in two single ones); 2x1K none 0.860 ms, 512 / 256 / 128: 0.82 /
# 0.77 / 0.81; dim 1536 1x1K none 0.348, 256 / 128: 0.51 / 0.53; 1x2K, against 512 (2.42 waves): 256 / 128 0.92 / 0.94;
# dim 1536 1x2K (0.73 waves) 1.05 / 0.86, 1x8K (2.9 waves) 1.02 / 1.04; 2x2K (4.85 waves) 1.03 / 1.08, dim 1536 8x2K
# (5.8 waves) 1.03 / 1.06.
BWD_SEGMENT = 512
BWD_SEGMENT_WAVES = 32
BWD_SEGMENTS_FROM = 1024
BWD_SEGMENTED_FILL = 0.9
BWD_SHORTEST = 128
BWD_FILL = 0.75
BWD_RESIDENT = _runtime.resident_warps(255)  # one-warp backward programs an SM holds: 8


def _backward_segment(seqlen: int, programs: int, n_sms: int) -> int:
    """Tokens a segment of the dstate <= 32 backward for a grid of `programs` one-warp programs along the channels,
    or 0 (one program a sequence): see BWD_SEGMENT."""
    resident = BWD_RESIDENT * n_sms

    def fill(n: int) -> float:  # of the last wave of resident programs, for a grid of n
        return n / (_runtime.cdiv(n, resident) * resident)

    if fill(programs) >= BWD_FILL or seqlen < BWD_SEGMENTS_FROM:
        return 0
    segment = BWD_SEGMENT
    while segment > BWD_SHORTEST and fill(_runtime.cdiv(seqlen, segment) * programs) < BWD_SEGMENTED_FILL:
        segment //= 2
    segment = _doubled_within(segment, seqlen, programs, BWD_SEGMENT_WAVES * resident)
    return segment if segment < seqlen else 0


def _doubled_within(segment: int, seqlen: int, chains: int, most: int) -> int:
    """`segment`, doubled while cutting `chains` sequences of seqlen tokens into segments of it would make more than
    `most` programs (or until it covers the sequence): the forward's and the backward's bound on their grids."""
    while segment < seqlen and _runtime.cdiv(seqlen, segment) * chains > most:
        segment *= 2
    return segment


# The backward above dstate 32 (8 states a thread, 16 lanes a channel at dstate 128) runs in segments of this many
# tokens at every grid measured, with at most WIDE_PROGRAMS programs (1 KB of hand-over slot each at dstate 128)
WIDE_SEGMENT = 256
WIDE_PROGRAMS = 1 << 16

# The forward's register cap. Left to itself ptxas gives the dstate-16 kernel 128-145 registers; allowed
# 168 (the most that still lets 12 one-warp programs share an SM: a Hopper or Ampere SM splits its 64K
# registers between four schedulers, 16K each, so 169-255 registers leave 8), it schedules the tile's exps
# and loads further ahead. H100 (benchmarks/notes/selective_scan.md, eighth session), same layouts: 8x2K
# one lane 0.977 -> 0.852 ms, 4x8K two lanes 1.95 -> 1.73, 1x32K in segments 3.18 -> 2.79 (same segment),
# 1x4K four lanes 0.48 -> 0.43; 176 registers (8 programs an SM) 1.06 ms at 8x2K, 160 0.90, 152 0.92.
FWD_MAXNREG = 168
FWD_RESIDENT = _runtime.resident_warps(FWD_MAXNREG)  # one-warp forward programs an SM holds: 12

# The forward's early-publish segments (one lane a channel, where the channels leave the GPU short of warps): the
# shortest segment, doubled while the grid would pass FWD_SEGMENT_WAVES waves of resident programs, and the shortest
# sequence cut so. H200, 2.8B shape unless said, forward, against the previous rule's choice (a rounds model's, since
# removed, or four lanes without segments at batch 2 and below 2 x 1024 tokens; forty-fifth session), segments of
# 128 / 256 / 512 tokens: 1x2K (four lanes) 0.76 / 0.82 / 1.13 of its time, 1x4K (four lanes) 0.66 / 0.75 / 0.80,
# 1x8K (1024) 0.76 / 0.81 / 0.94, 1x16K (1856) 0.75 / 0.77 / 0.80, 1x32K (1728) 0.90 / 0.90 / 0.92, 1x128K (4544)
# 0.90 / 0.90 / 0.88, 2x8K (four lanes) 0.78 / 0.77 / 0.82, 2x16K (four lanes) 0.88 / 0.88 / 0.89, in the mixer's
# layout 0.76 at 256 and 512; dim 1536 1x32K (1024) 256: 0.85. 4x8K (two lanes, late segments) keeps its choice:
# one lane's early segments there 1.09-1.11.
# Where four lanes' programs fill FWD_SEGMENTS_FILL of a wave or more, four lanes stay (forty-sixth session, dim 1536,
# four lanes' time against early segments': 6x2K and 6x8K, 0.73 of a wave, 1.10 and 1.21; 8x2K, 8x4K, 8x8K, 0.97 of
# a wave, 0.90, 0.93, 0.95).
FWD_SEGMENT = 128
FWD_SEGMENT_WAVES = 32
FWD_SEGMENTS_FROM = 2048
FWD_SEGMENTS_FILL = 0.85


def _early_segment(seqlen: int, chains: int, n_sms: int) -> int:
    """Tokens a segment for `chains` one-warp programs along the sequence (FWD_SEGMENT, doubled while the segments'
    programs pass FWD_SEGMENT_WAVES waves of the resident ones)."""
    return _doubled_within(FWD_SEGMENT, seqlen, chains, FWD_SEGMENT_WAVES * FWD_RESIDENT * n_sms)


# Late hand-over segments (ForwardConfig.hand_late) where the channels fill the GPU already: their length and
# the grids they are used for (fewer waves of resident programs than this; none below 0.8 of a wave, where
# the later segments of a chain would wait for the earlier ones). H100, eighth and ninth sessions' notes:
# segments of 512 tokens beat 256, 1024 and 2048 at 8x2K, 16x2K and 4x8K.
LATE_SEGMENT = 512
LATE_WAVES = 4


@_runtime.cached(maxsize=256)
def forward_config(batch: int, dim: int, dstate: int, ngroups: int, n_sms: int, elem_size: int = 2,
                   seqlen: int = 0, channels_last: bool = False) -> ForwardConfig:
    """Lanes per channel: the fewest that keep at most 8 states a thread up to dstate 16 (2 at dstate 16),
    16 beyond, doubled up to 4 while the grid has fewer than 8 warps per SM. Where even 4 lanes leave part of a
    wave of resident programs (batch 1 or 2 of the 2.8B shape at dstate <= 16) and the sequence has at least
    FWD_SEGMENTS_FROM tokens, one lane a channel in short early-publish segments along the sequence instead
    (`_early_segment`; forty-fifth session, H200: 10-34 % faster than the rounds model's longer segments or four
    lanes at every batch-1 and batch-2 length measured). One warp per program, two from dstate 64 or at 4 lanes; a
    168-register cap (FWD_MAXNREG) everywhere. Tiles of 16 bytes of u per thread and row (8 tokens of
    bf16: one vector load). Measured on an H100 (benchmarks/notes/selective_scan.md, eighth session; seqlen
    0 means unknown: no segments), all under the cap: 8x2K two lanes 0.754 ms, one 0.852, four 1.02; 32x2K
    two 2.82, one 3.56; 4x8K two 1.73, four (two warps) 2.05; 2x16K four 2.36, two (before the cap) 3.47;
    1x4K four 0.43, one lane in 4 segments 0.46; 1x32K one lane in 19 segments 2.52, two lanes in 9
    segments 2.82; at dstate 128 lanes 8 with two warps is the best by 30 %. A full grid of one-warp programs
    of under LATE_WAVES waves runs in segments of LATE_SEGMENT tokens handed on after the output pass
    (ninth session: 4x8K 1.735 -> 1.585 ms, 16x2K 1.532 -> 1.442).

    channels_last: u is channels contiguous (the Mamba-1 mixer's layout, `channels_contiguous`). At dstate <= 16,
    where one lane a channel gives at least 8 warps per SM, one lane and 64 channels a program (two warps) instead
    of two lanes in 16: a token's 64 channels are one 128-byte line of each input, where 16 channels were a 32-byte
    sector. H200, 2.8B shape, forty-fourth session: 8x2K 0.846 -> 0.745 ms (the contiguous layout's 0.731; that
    layout gains nothing from it), 8x2047 0.934 -> 0.759, 32x2K 3.096 -> 2.566; at 4x8K (under 5 warps an SM, no
    segments) 1.887 -> 2.396, hence the bound. Where 32-channel one-warp programs make more than one wave and fewer
    than LATE_WAVES, those in late segments instead (16x2K 0.958, 32x2K 0.951 of the 64-channel programs' time;
    forty-fifth session). Groups of B and C that split the programs below a warp's 32
    channels keep the contiguous layout's choice (one lane would leave most of the warp idle)."""
    dpg = dim // ngroups
    tile = max(2, min(8, 16 // elem_size))
    resident = FWD_RESIDENT * n_sms  # one-warp programs the GPU holds at once
    if batch * dim * 4 < FWD_SEGMENTS_FILL * 32 * resident and dstate <= 16 and seqlen >= FWD_SEGMENTS_FROM:
        # even 4 lanes a channel leave part of one wave of resident programs (batch 1 or 2 of the 2.8B shape): one
        # lane a channel (the cheapest per element) in short segments along the sequence (`_early_segment`)
        block_d = _fit_block(32, dim, dpg, ngroups)
        segment = _early_segment(seqlen, _runtime.cdiv(dim, block_d) * batch, n_sms)
        return ForwardConfig(block_d, 1, tile, 1, segment=segment, maxnreg=FWD_MAXNREG)
    lanes = 1
    while _runtime.cdiv(dstate, lanes) > (8 if dstate <= 16 else 16):
        lanes *= 2
    while lanes < 4 and batch * dim * lanes < 8 * n_sms * 32:
        lanes *= 2
    wide = _fit_block(64, dim, dpg, ngroups)
    if channels_last and dstate <= 16 and lanes == 2 and batch * dim >= 8 * n_sms * 32 and wide >= 32:
        narrow = _fit_block(32, dim, dpg, ngroups)
        programs = _runtime.cdiv(dim, narrow) * batch
        if seqlen >= 4 * LATE_SEGMENT and resident < programs < LATE_WAVES * resident:
            # past one wave: one-warp programs in late segments even out the waves (H200, forty-fifth session:
            # 16x2K 0.958, 32x2K 0.951 of the 64-channel programs' time; 8x2K, under a wave, 1.018)
            return ForwardConfig(narrow, 1, tile, 1, segment=LATE_SEGMENT, maxnreg=FWD_MAXNREG, hand_late=True)
        return ForwardConfig(wide, 1, tile, wide // 32, maxnreg=FWD_MAXNREG)
    warps = 2 if dstate >= 64 or lanes == 4 else 1
    block_d = _fit_block(32 * warps // lanes, dim, dpg, ngroups)
    programs = _runtime.cdiv(dim, block_d) * batch
    if (dstate <= 16 and warps == 1 and seqlen >= 4 * LATE_SEGMENT
            and 0.8 * resident <= programs < LATE_WAVES * resident):
        # a grid of under LATE_WAVES waves: segments handed on after the output pass (no extra pass) run it in
        # shorter programs (4x8K 1.735 -> 1.585 ms, 16x2K 1.532 -> 1.442, 8x2K 0.755 -> 0.749; 32x2K, 6.5 waves,
        # gains nothing: 2.823 -> 2.826)
        return ForwardConfig(block_d, lanes, tile, warps, segment=LATE_SEGMENT, maxnreg=FWD_MAXNREG, hand_late=True)
    return ForwardConfig(block_d, lanes, tile, warps, maxnreg=FWD_MAXNREG)


def _backward_lanes(dstate: int) -> int:
    return min(32, _runtime.next_power_of_2(_runtime.cdiv(dstate, 4 if dstate <= 32 else 8)))


def backward_config_uncached(batch: int, dim: int, dstate: int, ngroups: int, seqlen: int, n_sms: int,
                             elem_size: int = 2) -> BackwardConfig:
    """The forward's layout with at most 4 states per lane up to dstate 32, 8 beyond (the
    backward keeps ~4 registers per state, and each lane repeats its channel's per-token work), one
    warp per program, chunks of 32 tokens; segments along the sequence where the grid is short of warps
    (`_backward_segment`: a grid that leaves most of its last wave empty, batch 1 and 2 of the 2.8B shape), and above
    dstate 32 segments of WIDE_SEGMENT tokens everywhere. Measured on an H100 (benchmarks/notes/selective_scan.md,
    backward v2): dstate 16 at 8x2K lanes 4 beats 2 by 15 %, 8 by 16 %, 1 by 2x; at 1x32K lanes 4
    beats 8 by 35 % although the grid is smaller; dstate 128 lanes 16 with one warp beats two by 40 %;
    chunks of 16, 32, 64 tokens are within 4 %."""
    lanes = _backward_lanes(dstate)
    block_d = _fit_block(32 // lanes, dim, dim // ngroups, ngroups)
    tile = max(2, min(8, 16 // elem_size))
    warps = _runtime.cdiv(dim, block_d) * batch
    segment = _backward_segment(seqlen, warps, n_sms)  # (H100, first measured: 1x32K 15.3 -> 13.2 ms)
    if dstate > 32:
        # short segments whatever the grid, at most WIDE_PROGRAMS programs (a hand-over slot each): H100, dstate
        # 128, twentieth session: 1x1K 3.48 -> 2.83 ms (segments of 128: 2.72, 512: 3.08), 1x2K 6.75 -> 5.51, 2x1K
        # 6.09 -> 5.56, 4x1K (9.7 waves of programs) 12.50 -> 10.62
        n_seg = min(seqlen // WIDE_SEGMENT, WIDE_PROGRAMS // warps)
        segment = _runtime.cdiv(_runtime.cdiv(seqlen, n_seg), 32) * 32 if n_seg >= 2 else 0
    return BackwardConfig(block_d, lanes, tile, 32, 1, segment=segment)


backward_config = _runtime.cached(maxsize=256)(backward_config_uncached)


def ckpt_layout(dstate: int) -> tuple[int, int]:
    """(CK, CK_RUN): how a channel's row of stored states (`scan_forward`'s ckpt) is ordered. State n lies at
    (n % CK) * CK_RUN + n // CK: CK runs of CK_RUN = dstate / CK states, one run per lane of the default backward
    (`backward_config`: lane l holds the states n = l (mod lanes)), so that each lane's states are together and
    a forward lane stores them as 16-byte vectors. (1, 0) (the natural order) where dstate is not a multiple of
    those lanes or CKPT_BY_LANES is off. The layout depends on dstate alone, so a forward and a backward with other
    configurations still agree on it."""
    lanes = _backward_lanes(dstate)
    if not CKPT_BY_LANES or lanes == 1 or dstate % lanes:
        return 1, 0
    return lanes, dstate // lanes


def ckpt_states(ckpt: torch.Tensor) -> torch.Tensor:
    """The stored states of `scan_forward` (batch, n, dim, dstate) with the state axis in natural order."""
    dstate = ckpt.shape[-1]
    ck, run = ckpt_layout(dstate)
    if ck == 1:
        return ckpt
    n = torch.arange(dstate, device=ckpt.device)
    return ckpt[..., (n % ck) * run + n // ck]


def row_align(*tensors: torch.Tensor, seqlen: int | None = None) -> int:
    """The kernels' ALIGN_IN / ALIGN_OUT: the largest power of two up to ROW_ALIGN that divides the (batch, dim) strides
    of every (batch, dim, seqlen) tensor given (and seqlen), so that every row starts at a multiple of it. The JIT
    marks a stride only when it is a multiple of 16: rows of 2040 or 1000 tokens are 16-byte aligned in bf16 (8
    elements), but the kernels would not know it, and their tiles' loads and stores would split into 2-byte ones
    (offline, sm_90: 24 a tile instead of 3 vectors). A tensor with stride 1 along dim (the Mamba-1 mixer's transposed
    views) gives 1: its tiles are vectors along the channels, which the JIT's marks already cover."""
    values = [s for t in tensors for s in t.stride()[:2]] + ([seqlen] if seqlen is not None else [])
    align = ROW_ALIGN
    while align > 1 and any(v % align for v in values):
        align //= 2
    return max(align, 1)


# The (batch, dim, seqlen) outputs (y; du, ddelta, dz) take u's layout: tokens contiguous, or channels contiguous
# (stride 1 along dim: the Mamba-1 mixer's transposed views; flashssm's causal_conv1d keeps its input's layout too).
# Channels-contiguous outputs are stored as the inputs are loaded, a vector across channels a token, so a length that
# is no multiple of 8 no longer splits their stores, and the mixer's next GEMM (out_proj; the projections' backward)
# reads them without a transpose. (False: always tokens contiguous, the previous form, for A/B.)
OUTPUTS_LIKE_U = True


def channels_contiguous(u: torch.Tensor) -> bool:
    """u (batch, dim, seqlen) has stride 1 along dim (and seqlen's stride is not 1 too: a dim or seqlen of 1 leaves
    both layouts the same memory, taken as tokens contiguous)."""
    return u.stride(1) == 1 and u.stride(2) > 1


def rows_like(u: torch.Tensor, dtype: torch.dtype, empty=None) -> torch.Tensor:
    """A (batch, dim, seqlen) output in u's layout (`OUTPUTS_LIKE_U`): channels contiguous when u's are, else tokens
    contiguous. empty(shape, dtype): the allocator (the custom ops' fakes pass theirs), `_runtime.empty` by default."""
    batch, dim, seqlen = u.shape
    empty = empty or (lambda shape, dt: _runtime.empty(shape, dt, u.device))
    if OUTPUTS_LIKE_U and channels_contiguous(u):
        return empty((batch, seqlen, dim), dtype).transpose(1, 2)
    return empty((batch, dim, seqlen), dtype)


def _acc(dtype: torch.dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def _as4(t: torch.Tensor) -> torch.Tensor:
    """B or C as (batch, ngroups, dstate, seqlen): the shared form gets a group axis of stride 0."""
    return t.unsqueeze(1) if t.dim() == 3 else t


def sequence_index(cu_seqlens: torch.Tensor | None, seqlen: int) -> torch.Tensor | None:
    """int32 (seqlen,): the packed sequence of every token (no host synchronisation)."""
    if cu_seqlens is None:
        return None
    tokens = torch.arange(seqlen, device=cu_seqlens.device, dtype=cu_seqlens.dtype)
    return torch.searchsorted(cu_seqlens[1:].contiguous(), tokens, right=True).to(torch.int32)


def packed_batch(offsets: tuple[int, ...]) -> tuple[int, int]:
    """(batch, seqlen) of the dense batch a packing's backward is configured as: its longest sequence, and as many
    of those as its tokens fill (at least one): a packing of one long sequence and a few short ones is a batch of
    one whose long walk wants segments, eight sequences of 2K a batch of 8x2K."""
    longest = max(max(e - s for s, e in zip(offsets, offsets[1:])), 1)
    return max(1, offsets[-1] // longest), longest


def packed_backward_config(offsets: tuple[int, ...], dim: int, dstate: int, ngroups: int, n_sms: int,
                           elem_size: int = 2) -> BackwardConfig | None:
    """The configuration of a packing's backward in rows (`packed_batch`'s dense batch's), or None where that cuts its
    sequences into segments and ROWS_BWD_SEGMENTS does not take them (off, or dstate > 32): the packed row as one
    batch-1 sequence then."""
    n_dense, longest = packed_batch(offsets)
    config = backward_config(n_dense, dim, dstate, ngroups, longest, n_sms, elem_size)
    return None if config.segment and not (ROWS_BWD_SEGMENTS and dstate <= 32) else config


def scan_forward(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, *, seq_index=None,
                 num_seqs=None, return_last_state=False, ckpt_tile=None, config: ForwardConfig | None = None,
                 offsets: tuple[int, ...] | None = None):
    """Launch the forward on validated inputs.

    Packed sequences: `seq_index` (`sequence_index`) and num_seqs; with `offsets` (cu_seqlens' host values) too, each
    sequence runs as a chain of its own, short ones sharing rows (`varlen_rows`; the configuration is a dense batch's
    of as many sequences of the longest one's length), else the packed row as one sequence of batch 1.

    Returns (y (batch, dim, seqlen) in u's dtype, last_state (num_seqs, dim, dstate) fp32 or None,
    ckpt (batch, cdiv(seqlen, ckpt_tile), dim, dstate) fp32 or None: the state entering every
    ckpt_tile-th token, for the backward, each channel's states in `ckpt_layout`'s order; `ckpt_states`
    gives them in natural order).
    """
    batch, dim, seqlen = u.shape
    dstate = A.shape[1]
    B4, C4 = _as4(B), _as4(C)
    ngroups = B4.shape[1]
    packed_rows = ROWS and seq_index is not None and offsets is not None
    if config is None and packed_rows:
        longest = packed_batch(offsets)[1]
        config = forward_config(max(1, len(offsets) - 1), dim, dstate, ngroups, _runtime.sm_count(u.device, on_cpu=4),
                                u.element_size(), longest)
    cfg = config or forward_config(batch, dim, dstate, ngroups, _runtime.sm_count(u.device, on_cpu=4),
                                   u.element_size(), seqlen, channels_last=channels_contiguous(u))
    _check_groups(cfg, dim, ngroups)
    state_dtype = torch.float64 if u.dtype == torch.float64 else torch.float32
    y = rows_like(u, u.dtype)
    last = None
    if return_last_state:
        n = num_seqs if seq_index is not None else batch
        if seq_index is not None:  # an empty sequence's last state is its zero initial state: no token writes it
            last = torch.zeros((n, dim, dstate), dtype=state_dtype, device=u.device)
        else:
            last = _runtime.empty((n, dim, dstate), state_dtype, u.device)
    tile = cfg.tile
    ckpt = None
    if ckpt_tile is not None:
        while ckpt_tile % tile:
            tile //= 2
        ckpt = _runtime.empty((batch, _runtime.cdiv(seqlen, ckpt_tile), dim, dstate), state_dtype, u.device)
    z_arg = z if z is not None else u
    slots = _runtime.cdiv(dstate, cfg.lanes)
    ck, ck_run = ckpt_layout(dstate) if ckpt is not None else (1, 0)
    bc_dtype = state_dtype
    if BC_INPUT_DTYPE and B.element_size() == 2 and B.dtype == C.dtype and (dstate > 16 or ckpt is not None):
        bc_dtype = B.dtype  # (exact: the values are these)
    bc = bc_tiles(B4, C4, slots * cfg.lanes, tile, bc_dtype)
    prefetch_bc = slots * tile <= cfg.prefetch_bc  # a whole tile of B and C ahead (no slot-ahead loads then)
    n_blocks = _runtime.cdiv(dim, cfg.block_d)
    table = A
    window = False
    row_segments = False  # (ROWS: whether the rows' kernel compiles the hand-over, SEGMENTS_WHERE_CHAINED)
    if packed_rows:  # a program per (row, block of channels), tickets row-major
        table, n_rows, shared, chained = varlen_rows(offsets, cfg.segment, tile, u.device, ROW_GROUP, LONGEST_FIRST)
        row_segments = chained if SEGMENTS_WHERE_CHAINED else cfg.segment > 0
        # one sequence a row: its boundaries are the row's [lo, hi), no per-token sequence index (WINDOW_FWD)
        window = WINDOW_FWD and not shared
        n_programs = n_rows * n_blocks
        counter, flags, slot_buf = _runtime.workspace(u.device).get(max(n_programs, 1),
                                                                     slots * cfg.lanes * cfg.block_d, state_dtype)
        seg, n_seg, grid = seqlen, 1, (n_programs,)
        if not n_rows:  # (every sequence empty: nothing to run; their final states are the zeros above)
            return y, last, ckpt
    else:
        seg, n_seg, n_programs, counter, flags, slot_buf, grid = _segments(cfg.segment, seqlen, n_blocks, batch,
                                                                          slots * cfg.lanes * cfg.block_d,
                                                                          state_dtype, u.device, y)
    compiled = _runtime.launch(_scan_fwd_kernel, grid, (
        u, delta, A, bc, D if D is not None else A, z_arg, delta_bias if delta_bias is not None else A,
        seq_index if seq_index is not None else A, y, last if last is not None else y, ckpt if ckpt is not None else y,
        counter, flags, slot_buf, table,
        batch, dim, dstate, seqlen, dim // ngroups, ngroups, bc.shape[2], 0 if ckpt is None else ckpt.shape[1],
        n_seg, seg, n_programs,
        *u.stride(), *delta.stride(), *A.stride(), *z_arg.stride(), *y.stride()), u.device,
        BLOCK_D=cfg.block_d, NL=cfg.lanes, SLOTS=slots, TILE=tile, CKPT=ckpt_tile or tile,
        PREFETCH_BC=prefetch_bc, PREFETCH_TILES=cfg.prefetch_tiles, FAST=_runtime.gpu_code(u), HAS_D=D is not None,
        HAS_Z=z is not None, HAS_DELTA_BIAS=delta_bias is not None,
        DELTA_SOFTPLUS=bool(delta_softplus), IS_VARLEN=seq_index is not None and not window,
        STORE_LAST=return_last_state,
        STORE_CKPT=ckpt is not None, SEGMENTS=n_seg > 1 or row_segments, HAND_LATE=cfg.hand_late,
        ACC=_acc(u.dtype),
        BC_AHEAD=BC_AHEAD_FWD and ckpt is not None and not prefetch_bc, CK=ck, CK_RUN=ck_run,
        TILE_AHEAD=TILE_AHEAD_FWD, ROWS=packed_rows, WINDOW=window, CLEAN=SHARED_TILES_DENSE,
        PEEL=window and peel_edge_tiles(offsets, ckpt is not None),
        ALIGN_IN=row_align(u, delta, z_arg),
        ALIGN_OUT=row_align(y, seqlen=seqlen), num_warps=cfg.num_warps, SPLIT_OUT=SPLIT_OUT_FWD,
        **({"maxnreg": cfg.maxnreg} if cfg.maxnreg and _runtime.gpu_code(u) else {}),
    )
    if compiled is not None:
        last_compiled["forward"] = compiled
    return y, last, ckpt


# The forward's output work (the gate, D's term, y's store) shared by a channel's lanes, each its share of the tile's
# tokens, instead of repeated on every lane (two lanes or more). H200, 2.8B shape, alternating, y the same bits
# (seventy-ninth session, benchmarks/notes/selective_scan.md): 8x2K forward 0.722 -> 0.675 ms, storing the backward's
# states 0.789 -> 0.722, dstate 128 8x2K 5.045 -> 4.697. (The backward's the same way: 8x2K -1.4 %, 1x32K +2.5 %; not
# taken.) False: every lane its channel's (A/B).
SPLIT_OUT_FWD = True
# The backward's per-token work shared by a channel's lanes: the tile's softplus, the gate's sigmoid and dy computed by
# each lane for its share of the tokens and handed to the others (a shuffle level a lane bit), and the output work
# after the slots as the forward's. Offline (sm_90, triton 3.6, 8x2K's backward at four lanes): 2504 -> 2208
# instructions, the tiles' loops 300 -> 292 and 1613 -> 1351, MUFU 115 -> 81, spilled bytes 24 -> 0, barriers 25 -> 10.
# H200, 2.8B shape, alternating (eightieth session, benchmarks/notes/selective_scan.md): the backward 8x2K 4.351 ->
# 3.874 ms (-10.9 %), 1x32K 10.198 -> 9.513 (-6.7 %), packed 8x2K 4.376 -> 4.224 (-3.5 %). du, ddelta, dz, dA, dB, dC
# the same values (on a GPU within a rounding: a multiply-add contracts otherwise); dD and ddelta_bias summed in another
# order. False: every lane its channel's (A/B).
SHARED_TOKENS_BWD = True
# Packed sequences' forward as a dense batch's: a chain of segments a sequence (`varlen_rows`). False: the packed row
# as one sequence of batch 1, in segments with a first pass (A/B).
ROWS = True
# Rows of one sequence each: the forward reads the sequence's boundaries from the row ([lo, hi): the tokens of the
# neighbours in its first and last tile pass as a decay of 1 with no input, the final state is stored after the row)
# instead of the per-token sequence index and its reset, a multiply a state and token (the varlen form, which rows
# shared by short sequences need); the tiles inside the row's tokens run the dense batch's code. H200, 2.8B shape,
# forward storing the backward's states, alternating (forty-first session), y the same bits: 8 x 2048 packed 0.889 ->
# 0.792 ms (dense 0.777), 8 ragged 0.887 -> 0.795, 64 ragged 0.884 -> 0.802 (dense 64 x 256 0.759). (The thirty-ninth
# session's window form masked every tile, and its y stores inside a row lost their vectors: 1.140 ms.) False: the
# varlen form always (A/B).
WINDOW_FWD = True
# The same for the backward: each row walks back from its own end, its gradient handed between the segments of a
# long sequence only. H200, 2.8B shape, training call (fortieth session, benchmarks/notes/selective_scan.md): 8 x 2048
# packed 6.858 -> 5.946 ms (dense 5.184), 64 x 256 6.812 -> 5.939 (dense 5.047). False: the packed row as one sequence
# of batch 1, in segments with a first pass (A/B).
ROWS_BWD = True
# The packed backward's rows also where its configuration cuts sequences into segments at dstate <= 32 (a long
# sequence dominates the packing). H200, one sequence of 16384 tokens of the 2.8B shape in three segments: rows
# 6.070 ms against the packed row's 5.751 in the fortieth session; since the rows' inner chunks run the dense code
# (INNER_CHUNKS_DENSE), 5.441 against 5.739 (forty-second session, du the same bits). Above dstate 32 (segments
# whatever the grid) not measured: the packed row there. False: the packed row wherever there are segments (A/B).
ROWS_BWD_SEGMENTS = True
# Rows of one sequence each: the backward reads the sequence's boundaries from the row ([lo, hi), the last-state
# gradient entering at the row's end as in a dense batch) instead of the per-token sequence index (the varlen form,
# which rows shared by short sequences need). H200, training call at 8 x 2048 packed: 6.308 -> 5.946 ms. False: the
# varlen form always (A/B).
WINDOW_BWD = True
# Short packed sequences share a row while their tokens together stay within this many (and a segment): a program
# per sequence of a few tokens would be all fixed cost, and the backward holds a scratch (~1.3 MB at dim 5120) and
# a slice of dA per row, so that the rows stay O(tokens / ROW_GROUP + long sequences' segments). 0: a row each.
ROW_GROUP = 256
# Each segment rank's rows take their tickets longest first (1), or in sequence order (0; A/B). H200, the backward
# alone: 8 ragged sequences of the 2.8B shape (longest 2669 of 16384 tokens) 5.484 -> 5.039 ms, 64 ragged 5.589 -> 5.497.
LONGEST_FIRST = 1
# The backward's rows run a chunk that lies inside the row's own tokens [lo, hi) with the dense batch's code, and
# only a row's first and last chunks with the window's masks (each token compared with lo and hi in every tile:
# 64-bit compares, predicates and selects a token, and 2-byte stores where the dense code stores 4 bytes). Nsight
# Compute on the H200, 8 x 2048 of the 2.8B shape (forty-first session): the rows' kernel executed 9 % more
# instructions than the dense one (2.71e9 against 2.49e9, ISETP/UISETP/LOP3/PLOP3/P2R/FSEL) at 6 % more cycles an
# instruction, 4.95 against 4.30 ms. With this (H200, backward alone, alternating, du the same bits): 8 x 2048 4.934
# -> 4.278 ms (dense 4.319), 8 ragged 5.017 -> 4.380, 64 ragged 5.476 -> 4.924. False: every chunk with the masks
# (A/B).
INNER_CHUNKS_DENSE = True
# A row's first and last chunk run only their tiles that hold some of the row's own tokens: the backward's rows start
# and end on whole chunks of stored states (32 tokens at dstate 16), so a packed sequence ran up to 31 of its
# neighbours' tokens at each end, all of them with the window's masks (at 64 sequences of ~256 tokens, ~11 % of the
# tokens walked). H200, backward alone, alternating (fifty-fourth session), same bits: 64 ragged x ~256 of the 2.8B
# shape 5.206 -> 4.938 ms; 8 ragged x ~2K 4.456 -> 4.497 (1 % fewer tokens walked there; +0.8 % again over 9 rounds,
# fifty-fifth session: offline, a guard on k_hi put two spill loads into `_segment_grad`'s tile loop; dropped since,
# not yet timed). False: every tile of the chunk (A/B).
EDGE_TILES_BWD = True
# Where any row is shared by short sequences, every row of the launch reads the per-token sequence index (IS_VARLEN)
# in every chunk: a select a state and token at each boundary test, and the sequence's last-state gradient looked up
# a token. With this, a chunk inside a row's tokens that no sequence starts or ends in runs the dense batch's code, and
# the others take the edge chunks' form (the index and the window). H200, backward alone, alternating (fifty-fifth
# session), same bits: 4 x ~3K and 64 x ~64 tokens packed (m1train-2.8b-packed-mix, rows shared) 5.130 -> 4.800 ms
# (-6.4 %); 64 x ~256 (no shared row: the switch does not apply) 4.901 -> 4.895. False: every chunk of such a launch
# with the index (A/B).
SHARED_CHUNKS_DENSE = True
# The same for the forward's output pass: where rows are shared, a tile inside a row's tokens that no sequence starts in
# (nor, returning the last states, ends in) runs the dense code, instead of a select a state and token. H200,
# forward alone (fifty-fifth session), same bits: the packed mix above 1.193 -> 1.106 ms (-7.3 %), with the
# backward's states 1.246 -> 1.165. False: every tile with the index (A/B).
SHARED_TILES_DENSE = True
# The packed rows' kernels compile the hand-over between a long sequence's segments (SEGMENTS: the backward's own-share
# pass, waits and publishes; the forward's first pass and hand-over) only where some row of the launch chains on to
# another (`varlen_rows`' fourth value), not wherever the configuration has segments (the forward) or rows are used at
# all (the backward): the packings of short sequences ran that code for no row. Offline (sm_90, triton 3.6, the packed
# backward in rows): 5776 -> 5040 instructions, the own-share tile loop gone, the chunk loop's spilled loads 10 -> 12
# a chunk of 32 tokens, its instruction mix otherwise the same. Measured slower, so off: H200 (fifty-sixth session),
# backward alone, 8 x 2K packed 4.382 -> 4.778 ms (+9.0 %), 64 x ~256 4.696 -> 5.275 (+12.3 %), forwards unchanged.
# Nsight Compute on the 64 x 256 backward: the same instructions executed (2.647 G against 2.643 G), but warps stalled
# waiting for instructions (no_instruction 0.03 -> 0.44 a issued instruction): the rows kernel's 74 KB chunk loop
# (an edge and an inner copy of the tile loops) fetches well where ptxas lays it out with the hand-over code before
# it, and badly without. False: the configuration's rule.
SEGMENTS_WHERE_CHAINED = False
# The forward's rows of one sequence (WINDOW) run their masked edge tiles (the first, where the row starts before its
# sequence; the last, where the sequence ends inside a tile) outside the loop of their dense tiles, which then holds
# the dense tile alone, not beside the masked one (two copies of the masked tile in the kernel instead of one). Offline
# (sm_90, triton 3.6, cap 168, lanes 2): 1712 -> 2592 instructions, the dense loop 718 instructions a tile with 3
# spilled loads (the one loop's dense branch: 689, none), 36 bytes of spills. Measured (H200, fifty-seventh session,
# `ab_scan_flag.py`, two runs of 5 and 7 rounds, the same bits): the 2.8B shape's 64 packed sequences of ~256 tokens
# forward -5.2 / -5.3 %, with the backward's states -2.4 / -2.4 %; 8 of ~2K forward +2.2 / +2.2 %, with the states
# -1.5 / -1.6 %. So `peel_edge_tiles`: where the forward stores the states (training), and where the sequences are
# short (the edge tiles a larger share of each row). None: that rule; True / False: always / never (A/B).
PEEL_EDGE_TILES_FWD = None
# The mean sequence length up to which an inference forward peels (between the 256 that gained and the 2K that lost).
PEEL_MEAN_TOKENS = 1024


def peel_edge_tiles(offsets: tuple[int, ...], stores_states: bool) -> bool:
    """Whether the forward's rows of one sequence run their masked edge tiles outside the dense tiles' loop
    (PEEL_EDGE_TILES_FWD) for the packed sequences at `offsets` (cu_seqlens' values)."""
    if PEEL_EDGE_TILES_FWD is not None:
        return PEEL_EDGE_TILES_FWD
    return stores_states or offsets[-1] <= PEEL_MEAN_TOKENS * max(len(offsets) - 1, 1)


@functools.lru_cache(maxsize=64)
def varlen_rows(offsets: tuple[int, ...], segment: int, tile: int, device: torch.device,
                group: int = 0, longest: int = 0) -> tuple[torch.Tensor, int, bool]:
    """The rows of packed sequences (host offsets) for the kernels' ROWS form: each non-empty sequence cut into
    segments of `segment` tokens (0: one), the first from the tile holding its first token (rows start at multiples
    of `tile`: whole tiles for the forward's vector loads, whole chunks of stored states for the backward); sequences
    of one segment share a row while their tokens stay within `group` (and `segment`). As int64 (rows, 7): first
    token, end, the row's own tokens [lo, hi) (the others it runs through belong to its neighbours), the row of its
    sequence's previous segment (-1: none), whether a next segment follows, its (first) sequence; segment-major, so
    that a previous segment is an earlier row and a next one a later row (deadlock-free tickets, forwards and
    backwards). longest 1 (forward tickets, in table order) or -1 (backward tickets, from the last row): each segment
    rank's rows ordered so that the longest take the first tickets (a ragged packing's longest rows do not start
    last, in the final wave). Returns the table, its number of rows, whether any row holds several sequences and
    whether any row chains on to another (a sequence in several segments); cached per arguments (every layer of a
    model packs the same sequences)."""
    limit = min(group, segment) if segment > 0 else group
    rows = []  # [k, first sequence, first token, end, lo, hi] (k: the segment's place in its sequence)
    joining = None  # the row short sequences are joining, while it has room
    for s, (lo, hi) in enumerate(zip(offsets, offsets[1:])):
        if hi <= lo:
            continue
        if joining is not None and hi - joining[4] <= limit:
            joining[3] = joining[5] = hi
            continue
        first = lo // tile * tile
        step = segment if segment > 0 else hi - first
        k = 0
        while first + k * step < hi:
            rows.append([k, s, first + k * step, min(first + (k + 1) * step, hi), lo, hi])
            k += 1
        joining = rows[-1] if k == 1 and hi - lo < limit else None
    rows.sort(key=lambda row: (row[0], -longest * (row[5] - row[4]), row[1]))  # segment-major
    index = {(k, s): i for i, (k, s, *_) in enumerate(rows)}
    table = [(*row[2:], index.get((row[0] - 1, row[1]), -1), int((row[0] + 1, row[1]) in index), row[1])
             for row in rows]
    shared = any(hi > offsets[s + 1] for _, s, _, _, _, hi in rows)
    chained = any(k > 0 for k, *_ in rows)
    table_t = torch.tensor(table or [(0, 0, 0, 0, -1, 0, 0)], dtype=torch.int64).to(device, non_blocking=True)
    return table_t, len(table), shared, chained


def _segments(segment: int, seqlen: int, n_blocks: int, batch: int, slot_elems: int, dtype: torch.dtype,
              device: torch.device, placeholder: torch.Tensor):
    """Segment mode's launch arguments: (tokens per segment, segments, programs, ticket counter, flags,
    hand-over slots, grid); one segment (no hand-over, a grid of (blocks, batch)) when the segment is 0 or
    covers the sequence."""
    if 0 < segment < seqlen:
        n_seg = _runtime.cdiv(seqlen, segment)
        n_programs = n_blocks * batch * n_seg
        counter, flags, slots = _runtime.workspace(device).get(n_programs, slot_elems, dtype)
        return segment, n_seg, n_programs, counter, flags, slots, (n_programs,)
    return seqlen, 1, n_blocks * batch, placeholder, placeholder, placeholder, (n_blocks, batch)


def bc_tiles(B4: torch.Tensor, C4: torch.Tensor, npad: int, tile: int, dtype: torch.dtype,
             min_tiles: int = 0) -> torch.Tensor:
    """B and C (batch, ngroups, dstate, seqlen) as (batch, ngroups, n_tiles, 2, npad, tile) in dtype,
    zero-padded: the scan's layout (one launch; 2 * npad * 4 bytes per token, under 1 % of the
    forward's traffic at dim 5120). n_tiles: one more tile than the sequence has (the forward's
    prefetch past the last one reads it), and at least min_tiles (the backward's whole chunks)."""
    batch, ngroups, dstate, seqlen = B4.shape
    n_tiles = max(_runtime.cdiv(seqlen, tile) + 1, min_tiles)
    out = _runtime.empty((batch, ngroups, n_tiles, 2, npad, tile), dtype, B4.device)
    block_l = max(tile, min(256, _runtime.next_power_of_2(n_tiles * tile), 4096 // _runtime.next_power_of_2(npad)))
    grid = (_runtime.cdiv(n_tiles * tile, block_l), batch * ngroups)
    if batch * ngroups:
        _runtime.launch(_bc_tiles_kernel, grid, (B4, C4, out, dstate, seqlen, ngroups, n_tiles, *B4.stride(),
                                                 *C4.stride()), B4.device,
                        NPAD=npad, BLOCK_N=_runtime.next_power_of_2(npad), TILE=tile, BLOCK_L=block_l, num_warps=4)
    return out


def scan_backward(dout, dlast, u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, *, ckpt,
                  ckpt_tile, seq_index=None, deterministic=False, config: BackwardConfig | None = None,
                  offsets: tuple[int, ...] | None = None):
    """Launch the backward on validated inputs; ckpt and ckpt_tile from `scan_forward`.

    dout: (batch, dim, seqlen), any strides; dlast: (num_seqs, dim, dstate) or None, any strides (made contiguous: the
    kernel reads it as one block; autograd hands `last.sum()`'s expanded ones here).
    Packed sequences: `seq_index`; with `offsets` (cu_seqlens' host values) too, the rows of `varlen_rows` (whole
    chunks of ckpt_tile tokens) as a dense batch's rows, the configuration a dense batch's (`packed_batch`), unless
    that configuration has segments (`ROWS_BWD_SEGMENTS`); else the packed row as one sequence of batch 1.
    Returns [du, ddelta, dA, dB, dC, dD, dz, ddelta_bias] (None for absent inputs), each in its
    input's dtype and shape. Without `deterministic`, dB and dC are summed over blocks of channels
    by fp32 atomics; with it, one slice per block, summed in a fixed order (more memory).
    """
    batch, dim, seqlen = u.shape
    dstate = A.shape[1]
    if dlast is not None:
        dlast = dlast.contiguous()
    B4, C4 = _as4(B), _as4(C)
    ngroups = B4.shape[1]
    dpg = dim // ngroups
    packed_rows = ROWS_BWD and seq_index is not None and offsets is not None
    if config is None and packed_rows:
        config = packed_backward_config(offsets, dim, dstate, ngroups, _runtime.sm_count(u.device, on_cpu=4),
                                        u.element_size())
        packed_rows = config is not None
    cfg = config or backward_config(batch, dim, dstate, ngroups, seqlen, _runtime.sm_count(u.device, on_cpu=4),
                                    u.element_size())
    _check_groups(cfg, dim, ngroups)
    tile = cfg.tile
    while ckpt_tile % tile:
        tile //= 2
    acc_dtype = torch.float64 if u.dtype == torch.float64 else torch.float32
    n_ckpt = _runtime.cdiv(seqlen, ckpt_tile)
    slots = _runtime.cdiv(dstate, cfg.lanes)
    blocks_per_group = _runtime.cdiv(dpg, cfg.block_d)
    dev = u.device

    n_blocks = _runtime.cdiv(dim, cfg.block_d)
    segment = cfg.segment
    if segment % ckpt_tile:  # segments end where the forward's stored states are
        raise ValueError(f"BackwardConfig.segment ({segment}) must be a multiple of ckpt_tile ({ckpt_tile})")

    du = rows_like(u, u.dtype)
    ddelta = rows_like(u, delta.dtype)
    dz = rows_like(u, z.dtype) if z is not None else None
    table = A
    window = False
    row_segments = False  # (ROWS: whether the rows' kernel compiles the hand-over, SEGMENTS_WHERE_CHAINED)
    if packed_rows:  # a program per (row, block of channels), tickets from the last row
        table, rows, shared, chained = varlen_rows(offsets, segment, ckpt_tile, dev, ROW_GROUP, -LONGEST_FIRST)
        row_segments = chained or not SEGMENTS_WHERE_CHAINED
        # one sequence a row: its boundaries are the row's [lo, hi), no per-token sequence index (WINDOW_BWD)
        window = WINDOW_BWD and not shared
        n_programs = rows * n_blocks
        counter, flags, slot_buf = _runtime.workspace(dev).get(max(n_programs, 1), slots * cfg.lanes * cfg.block_d,
                                                               acc_dtype)
        seg, n_seg, grid = seqlen, 1, (n_programs,)
    else:
        seg, n_seg, n_programs, counter, flags, slot_buf, grid = _segments(segment, seqlen, n_blocks, batch,
                                                                          slots * cfg.lanes * cfg.block_d, acc_dtype,
                                                                          dev, du)
        rows = batch * n_seg  # dA, dD, ddelta_bias: one slice per batch row and segment (rows: per row)
    dA = _runtime.empty((rows, dim, dstate), acc_dtype, dev)
    dD = _runtime.empty((rows, dim), acc_dtype, dev) if D is not None else None
    dbias = _runtime.empty((rows, dim), acc_dtype, dev) if delta_bias is not None else None
    bc_shape = (batch, ngroups, dstate, seqlen)
    if deterministic:  # every element of every slice is written once
        dB = _runtime.empty((blocks_per_group, *bc_shape), acc_dtype, dev)
        dC = _runtime.empty((blocks_per_group, *bc_shape), acc_dtype, dev)
    else:
        dB = torch.zeros(bc_shape, dtype=acc_dtype, device=dev)
        dC = torch.zeros(bc_shape, dtype=acc_dtype, device=dev)

    if seqlen > 0 and batch > 0 and dim > 0 and n_programs > 0:
        bc = bc_tiles(B4, C4, slots * cfg.lanes, tile, acc_dtype, min_tiles=n_ckpt * (ckpt_tile // tile))
        z_arg = z if z is not None else u
        scratch = _runtime.empty((rows, n_blocks, ckpt_tile // tile, slots * cfg.lanes, cfg.block_d), acc_dtype, dev)
        ck, ck_run = ckpt_layout(dstate)
        compiled = _runtime.launch(_scan_bwd_kernel, grid, (
            u, delta, A, bc, D if D is not None else A, z_arg, delta_bias if delta_bias is not None else A,
            seq_index if seq_index is not None else A, ckpt, dout, dlast if dlast is not None else ckpt,
            du, ddelta, dz if dz is not None else du, dA, dB, dC, dD if dD is not None else dA,
            dbias if dbias is not None else dA, scratch, counter, flags, slot_buf, table,
            batch, dim, dstate, seqlen, dpg, ngroups, bc.shape[2], n_ckpt, blocks_per_group, n_seg, seg, n_programs,
            *u.stride(), *delta.stride(), *A.stride(), *z_arg.stride(), *dout.stride(), *du.stride()), u.device,
            BLOCK_D=cfg.block_d, NL=cfg.lanes, SLOTS=slots, TILE=tile, CHUNK=ckpt_tile, FAST=_runtime.gpu_code(u),
            HAS_D=D is not None, HAS_Z=z is not None, HAS_DELTA_BIAS=delta_bias is not None,
            DELTA_SOFTPLUS=bool(delta_softplus), IS_VARLEN=seq_index is not None and not window,
            HAS_DLAST=dlast is not None, DETERMINISTIC=bool(deterministic), SEGMENTS=n_seg > 1 or row_segments,
            ACC=_acc(u.dtype), num_warps=cfg.num_warps, BC_AHEAD=BC_AHEAD_BWD, TILE_AHEAD=TILE_AHEAD_BWD, CK=ck,
            CK_RUN=ck_run, ROWS=packed_rows, INNER=INNER_CHUNKS_DENSE, TRIM=EDGE_TILES_BWD, CLEAN=SHARED_CHUNKS_DENSE,
            ALIGN_IN=row_align(u, delta, z_arg, dout),
            ALIGN_OUT=row_align(du, seqlen=seqlen), SHARED_TOKENS=SHARED_TOKENS_BWD,
            **({"maxnreg": cfg.maxnreg} if cfg.maxnreg and _runtime.gpu_code(u) else {}),
        )
        if compiled is not None:
            last_compiled["backward"] = compiled
    else:
        for t in (du, ddelta, dz, dA, dD, dbias, dB, dC):
            if t is not None:
                t.zero_()
    if deterministic:
        dB, dC = dB.sum(0), dC.sum(0)
    dA = dA.sum(0)
    dB = dB.view(B.shape) if B.dim() == 4 else dB[:, 0]
    dC = dC.view(C.shape) if C.dim() == 4 else dC[:, 0]
    return [du, ddelta, dA.to(A.dtype), dB.to(B.dtype), dC.to(C.dtype),
            dD.sum(0).to(D.dtype) if D is not None else None, dz,
            dbias.sum(0).to(delta_bias.dtype) if delta_bias is not None else None]


def plan_backward(u, delta, A, B, C, D, z, delta_bias, delta_softplus, *, ckpt_tile, seq_index, num_seqs,
                  return_last_state, offsets, deterministic):
    """Compile ahead (`_runtime.plan_ahead`) the backward of a forward call with these arguments (the planner of
    `_runtime.compiling_ahead` around `scan_forward` calls this): `scan_backward` run on meta tensors, with dy in y's
    layout (`rows_like`), the last state's gradient present where the forward returns the last state (autograd then
    passes zeros for an unused one), and the stored states as the forward allocates them, so that its launches compile
    while the forward's do."""
    def dry_run(u, delta, A, B, C, D, z, delta_bias, seq_index):
        batch, dim, seqlen = u.shape
        dstate = A.shape[1]
        state_dtype = torch.float64 if u.dtype == torch.float64 else torch.float32
        dlast = None
        if return_last_state:
            n = num_seqs if seq_index is not None else batch
            dlast = torch.empty((n, dim, dstate), dtype=state_dtype, device=u.device)
        ckpt = torch.empty((batch, _runtime.cdiv(seqlen, ckpt_tile), dim, dstate), dtype=state_dtype, device=u.device)
        scan_backward(rows_like(u, u.dtype), dlast, u, delta, A, B, C, D, z, delta_bias, delta_softplus, ckpt=ckpt,
                      ckpt_tile=ckpt_tile, seq_index=seq_index, deterministic=deterministic, offsets=offsets)

    _runtime.plan_ahead(u.device, dry_run, u, delta, A, B, C, D, z, delta_bias, seq_index)


# B and C rows loaded a slot ahead of the slot's arithmetic (BC_AHEAD in the kernels): the slot loop waited on
# each slot's loads (Nsight Compute's stall sampling: 29 % of the backward's samples at dstate 128 on the first
# multiply-add after them). H100, backward alone (benchmarks/notes/selective_scan.md, twentieth session): 8x2K
# 5.56 -> 4.72 ms, 1x32K 13.0 -> 11.3, dim 1536 1x8K 1.12 -> 1.00, dstate 128 1x1K 3.93 -> 3.52. The forward
# gains only where it stores the backward's states (dstate 128 1x1K 0.62 -> 0.50 ms, dim 1536 1x8K 0.51 -> 0.49;
# alone it is even or up to 3 % slower), so it takes them only then. (False: the previous form, for A/B.)
BC_AHEAD_FWD = True
BC_AHEAD_BWD = True
TILE_AHEAD_BWD = True
# The forward's first pass (segments) loads each tile's u and delta while the tile before it runs, as the output pass
# does: Nsight Compute's stall sampling of the one-lane 1x32K forward had ~6 % of its samples on the first use of the
# tile just loaded. H100 A/B (twenty-eighth session), same bits: 2.8B 1x32K forward 2.536 -> 2.516 ms, with the
# backward's stored states 2.728 -> 2.620; 130M 1x32K even (0.904 -> 0.903, 0.970 -> 0.975). (False: loaded at the
# top of each tile, for A/B.)
TILE_AHEAD_FWD = True
# The stored states ordered by the backward's lanes (`ckpt_layout`), so that every forward layout stores them as
# 16-byte vectors: before, a forward of two lanes a channel (8x2K) stored them slot by slot, 4 bytes a thread into
# 16 sectors a warp instruction (twenty-first session: ~0.2 ms of its 0.95). (False: the natural order, for A/B.)
CKPT_BY_LANES = True
# The forward's B/C tiles in the inputs' 16-bit dtype (widened in registers, exact) rather than fp32, above dstate 16
# or where it stores the backward's states: half the L1 traffic of the B/C loads for one instruction more a value.
# dstate 128's 8x2K forward was L1-bound (Nsight Compute: 91 % of L1/TEX throughput); H100 A/B (twenty-second
# session): dstate 128 8x2K 6.84 -> 4.97 ms, 1x1K 0.450 -> 0.397; dstate 16 with the stored states 8x2K 0.827 ->
# 0.794, 1x32K -0.7 %; dstate 16 alone +0.6 to +2.6 % (it is not L1-bound: fp32 stays). The backward's tiles stay
# fp32: 16-bit ones cost it 1-4 % (8x2K 4.28 -> 4.35, 130M 1x8K 0.88 -> 0.92). (False: fp32 everywhere, for A/B.)
BC_INPUT_DTYPE = True

# The rows' alignment the kernels are told (`row_align`), in elements: 8 is 16 bytes in 16-bit dtypes, the widest
# vector. 1: none beyond the JIT's own marks (A/B).
ROW_ALIGN = 8

last_compiled = {}  # the compiled kernel of the last GPU launch, by direction: n_regs, n_spills (for tuning)


def supported(dstate: int) -> str | None:
    return None if dstate <= 256 else f"dstate {dstate} > 256"


__all__ = ["scan_forward", "scan_backward", "forward_config", "backward_config", "backward_config_uncached", "sequence_index", "supported",
           "ForwardConfig", "BackwardConfig", "ckpt_layout", "ckpt_states"]
