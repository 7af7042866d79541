"""Gated RMSNorm in Triton: forward in one launch, backward in one launch plus a small sum.

Forward: one program per (block of rows, group of channels) reads x (and z) once and writes y
once; the row's sum of squares stays in registers. Backward: recomputes the normalisation from
x and z (nothing is saved but the inputs), writes dx and dz, and accumulates the weight gradient
of its channels over a strided share of the row blocks; the per-program partials are added in a
fixed order afterwards (deterministic, no atomics).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from flashssm import _runtime
from flashssm.ops import grad_sink


@triton.jit
def _rmsnorm_fwd_kernel(
    x_ptr, z_ptr, w_ptr, y_ptr, res_ptr, res_out_ptr,
    n_rows, group_size, eps,
    stride_x_row, stride_z_row, stride_y_row, stride_res_row, stride_res_out_row,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_Z: tl.constexpr, NORM_BEFORE_GATE: tl.constexpr,
    HAS_RESIDUAL: tl.constexpr = False, VEC: tl.constexpr = 0,
):
    """HAS_RESIDUAL: x + residual (in fp32) is stored as res_out in its dtype, and that stored value is normalised."""
    o_m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    o_n = tl.arange(0, BLOCK_N)
    cols = tl.program_id(1) * group_size + o_n
    if VEC:
        cols = tl.max_contiguous(cols, VEC)
    m_n = o_n < group_size
    m = (o_m < n_rows)[:, None] & m_n[None, :]
    b_x = tl.load(x_ptr + o_m[:, None] * stride_x_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        b_s = b_x + tl.load(res_ptr + o_m[:, None] * stride_res_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
        b_s = b_s.to(res_out_ptr.dtype.element_ty)
        tl.store(res_out_ptr + o_m[:, None] * stride_res_out_row + cols[None, :], b_s, mask=m)
        b_x = b_s.to(tl.float32)
    b_w = tl.load(w_ptr + cols, mask=m_n, other=0.0).to(tl.float32)
    if HAS_Z:
        b_z = tl.load(z_ptr + o_m[:, None] * stride_z_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
        gate = b_z * tl.sigmoid(b_z)
        if not NORM_BEFORE_GATE:
            b_x = b_x * gate
    # [BLOCK_M]; under torch.compile (inductor) eps arrives as fp64: back to fp32 before it spreads
    rstd = 1.0 / tl.sqrt((tl.sum(b_x * b_x, axis=1) / group_size + eps).to(tl.float32))
    b_y = b_x * rstd[:, None] * b_w[None, :]
    if HAS_Z:
        if NORM_BEFORE_GATE:
            b_y = b_y * gate
    tl.store(y_ptr + o_m[:, None] * stride_y_row + cols[None, :], b_y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _bwd_inputs(x_ptr, z_ptr, dy_ptr, b_w, o_m, cols, m, stride_x_row, stride_z_row, stride_dy_row,
                HAS_Z: tl.constexpr, NORM_BEFORE_GATE: tl.constexpr):
    """One tile's backward inputs in fp32: x; dy; h, what is normalised (x, or x·silu(z) when the gate
    comes first); a = dy·w; a_g, the gradient of the normalised h (a, times the gate when it comes
    after the norm); the gate silu(z) and its derivative (x in their place without z: unused)."""
    b_x = tl.load(x_ptr + o_m[:, None] * stride_x_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
    b_dy = tl.load(dy_ptr + o_m[:, None] * stride_dy_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
    b_h = b_x
    b_a = b_dy * b_w[None, :]
    b_ag = b_a
    gate = b_x
    dgate = b_x
    if HAS_Z:
        b_z = tl.load(z_ptr + o_m[:, None] * stride_z_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
        sig = tl.sigmoid(b_z)
        gate = b_z * sig
        dgate = sig * (1.0 + b_z * (1.0 - sig))  # silu'(z)
        if NORM_BEFORE_GATE:
            b_ag = b_a * gate
        else:
            b_h = b_x * gate
    return b_x, b_dy, b_h, b_a, b_ag, gate, dgate


@triton.jit
def _bwd_outputs(dx_ptr, dz_ptr, o_m, cols, m, stride_dx_row, stride_dz_row, b_x, b_dy, b_h, b_a, b_ag, gate, dgate,
                 rstd, mean_ahn, HAS_Z: tl.constexpr, NORM_BEFORE_GATE: tl.constexpr, dres_ptr=None, dh_ptr=None,
                 stride_dres_row=0, stride_dh_row=0, HAS_DRES: tl.constexpr = False, STORE_DH: tl.constexpr = False):
    """Write one tile's dx (and dz) from `_bwd_inputs`, the rows' rstd and mean(a_g · hn) over the
    group; returns the tile's weight-gradient column sums. HAS_DRES: dx also takes the gradient reaching x by another
    path (the residual stream's, for a norm that added its residual in); STORE_DH: dx stored a second time in dh's
    dtype (the gradient of the add's other input)."""
    b_hn = b_h * rstd[:, None]  # the normalised input
    if HAS_Z:
        if NORM_BEFORE_GATE:
            dw = tl.sum(b_dy * b_hn * gate, axis=0)
            tl.store(dz_ptr + o_m[:, None] * stride_dz_row + cols[None, :],
                     (b_a * b_hn * dgate).to(dz_ptr.dtype.element_ty), mask=m)
        else:
            dw = tl.sum(b_dy * b_hn, axis=0)
    else:
        dw = tl.sum(b_dy * b_hn, axis=0)
    # d/dh of h·rstd(h): rstd (a_g − hn · mean(a_g · hn))
    b_dh = rstd[:, None] * (b_ag - b_hn * mean_ahn[:, None])
    if HAS_Z:
        if not NORM_BEFORE_GATE:
            tl.store(dz_ptr + o_m[:, None] * stride_dz_row + cols[None, :],
                     (b_dh * b_x * dgate).to(dz_ptr.dtype.element_ty), mask=m)
            b_dh = b_dh * gate
    if HAS_DRES:
        b_dh += tl.load(dres_ptr + o_m[:, None] * stride_dres_row + cols[None, :], mask=m, other=0.0).to(tl.float32)
    tl.store(dx_ptr + o_m[:, None] * stride_dx_row + cols[None, :], b_dh.to(dx_ptr.dtype.element_ty), mask=m)
    if STORE_DH:
        tl.store(dh_ptr + o_m[:, None] * stride_dh_row + cols[None, :], b_dh.to(dh_ptr.dtype.element_ty), mask=m)
    return dw


@triton.jit
def _rmsnorm_bwd_kernel(
    x_ptr, z_ptr, w_ptr, dy_ptr, dx_ptr, dz_ptr, dw_ptr, dres_ptr, dh_ptr,
    n_rows, dim, group_size, eps, n_blocks, n_splits,
    stride_x_row, stride_z_row, stride_dy_row, stride_dx_row, stride_dz_row, stride_dres_row, stride_dh_row,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_Z: tl.constexpr, NORM_BEFORE_GATE: tl.constexpr,
    HAS_DRES: tl.constexpr = False, STORE_DH: tl.constexpr = False, VEC: tl.constexpr = 0, BLOCK_B: tl.constexpr = 0,
    STAGES: tl.constexpr = 1,
):
    """The backward of groups that fit one tile: the whole group of BLOCK_M rows in registers. BLOCK_B: a second
    tile of the group's columns past the first BLOCK_N (a 2560-wide group as 2048 + 512 columns instead of one
    4096-wide tile, whose masked lanes hold registers too)."""
    i_split = tl.program_id(0)
    col0 = tl.program_id(1) * group_size
    o_n = tl.arange(0, BLOCK_N)
    cols = col0 + o_n
    if VEC:
        cols = tl.max_contiguous(cols, VEC)
    m_n = o_n < group_size
    b_w = tl.load(w_ptr + cols, mask=m_n, other=0.0).to(tl.float32)
    dw_acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    if BLOCK_B:
        o_nb = BLOCK_N + tl.arange(0, BLOCK_B)
        cols_b = col0 + o_nb
        if VEC:
            cols_b = tl.max_contiguous(cols_b, min(VEC, BLOCK_B))
        m_nb = o_nb < group_size
        c_w = tl.load(w_ptr + cols_b, mask=m_nb, other=0.0).to(tl.float32)
        dw_acc_b = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for it in tl.range(0, tl.cdiv(n_blocks - i_split, n_splits), num_stages=STAGES):
        o_m = (i_split + it * n_splits).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        m = (o_m < n_rows)[:, None] & m_n[None, :]
        b_x, b_dy, b_h, b_a, b_ag, gate, dgate = _bwd_inputs(
            x_ptr, z_ptr, dy_ptr, b_w, o_m, cols, m, stride_x_row, stride_z_row, stride_dy_row, HAS_Z, NORM_BEFORE_GATE)
        ss = tl.sum(b_h * b_h, axis=1)
        sah = tl.sum(b_ag * b_h, axis=1)
        if BLOCK_B:
            mb = (o_m < n_rows)[:, None] & m_nb[None, :]
            c_x, c_dy, c_h, c_a, c_ag, c_gate, c_dgate = _bwd_inputs(
                x_ptr, z_ptr, dy_ptr, c_w, o_m, cols_b, mb, stride_x_row, stride_z_row, stride_dy_row, HAS_Z,
                NORM_BEFORE_GATE)
            ss += tl.sum(c_h * c_h, axis=1)
            sah += tl.sum(c_ag * c_h, axis=1)
        rstd = 1.0 / tl.sqrt((ss / group_size + eps).to(tl.float32))
        mean_ahn = sah * rstd / group_size
        dw_acc += _bwd_outputs(dx_ptr, dz_ptr, o_m, cols, m, stride_dx_row, stride_dz_row, b_x, b_dy, b_h, b_a, b_ag,
                               gate, dgate, rstd, mean_ahn, HAS_Z, NORM_BEFORE_GATE, dres_ptr, dh_ptr,
                               stride_dres_row, stride_dh_row, HAS_DRES, STORE_DH)
        if BLOCK_B:
            dw_acc_b += _bwd_outputs(dx_ptr, dz_ptr, o_m, cols_b, mb, stride_dx_row, stride_dz_row, c_x, c_dy, c_h, c_a,
                                     c_ag, c_gate, c_dgate, rstd, mean_ahn, HAS_Z, NORM_BEFORE_GATE, dres_ptr, dh_ptr,
                                     stride_dres_row, stride_dh_row, HAS_DRES, STORE_DH)
    tl.store(dw_ptr + i_split.to(tl.int64) * dim + cols, dw_acc, mask=m_n)
    if BLOCK_B:
        tl.store(dw_ptr + i_split.to(tl.int64) * dim + cols_b, dw_acc_b, mask=m_nb)


@triton.jit
def _rmsnorm_bwd_wide_kernel(
    x_ptr, z_ptr, w_ptr, dy_ptr, dx_ptr, dz_ptr, dw_ptr, dres_ptr, dh_ptr,
    n_rows, dim, group_size, eps, n_blocks, n_splits,
    stride_x_row, stride_z_row, stride_dy_row, stride_dx_row, stride_dz_row, stride_dres_row, stride_dh_row,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_Z: tl.constexpr, NORM_BEFORE_GATE: tl.constexpr,
    HAS_DRES: tl.constexpr = False, STORE_DH: tl.constexpr = False, STAGES: tl.constexpr = 1,
):
    """The backward for groups wider than one tile: a first sweep over the group's column chunks
    sums h² and a_g·h per row, a second recomputes each chunk and writes dx (dz) and this split's dw
    partial (dw_ptr zeroed; each split owns its row of it: no atomics). Reads x, z, dy twice (the
    second time mostly from L2) instead of holding a whole 5120-wide row set in registers."""
    i_split = tl.program_id(0)
    col0 = tl.program_id(1) * group_size
    o_n = tl.arange(0, BLOCK_N)
    for it in range(0, tl.cdiv(n_blocks - i_split, n_splits)):
        o_m = (i_split + it * n_splits).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        m_m = o_m < n_rows
        ss = tl.zeros((BLOCK_M,), dtype=tl.float32)
        sah = tl.zeros((BLOCK_M,), dtype=tl.float32)
        for c in tl.range(0, group_size, BLOCK_N, num_stages=STAGES):
            cols = col0 + c + o_n
            m_n = (c + o_n) < group_size
            b_w = tl.load(w_ptr + cols, mask=m_n, other=0.0).to(tl.float32)
            b_x, b_dy, b_h, b_a, b_ag, gate, dgate = _bwd_inputs(
                x_ptr, z_ptr, dy_ptr, b_w, o_m, cols, m_m[:, None] & m_n[None, :], stride_x_row, stride_z_row,
                stride_dy_row, HAS_Z, NORM_BEFORE_GATE)
            ss += tl.sum(b_h * b_h, axis=1)
            sah += tl.sum(b_ag * b_h, axis=1)
        rstd = 1.0 / tl.sqrt((ss / group_size + eps).to(tl.float32))
        mean_ahn = rstd * sah / group_size          # mean(a_g · hn) over the group
        for c in tl.range(0, group_size, BLOCK_N, num_stages=STAGES):
            cols = col0 + c + o_n
            m_n = (c + o_n) < group_size
            m = m_m[:, None] & m_n[None, :]
            b_w = tl.load(w_ptr + cols, mask=m_n, other=0.0).to(tl.float32)
            b_x, b_dy, b_h, b_a, b_ag, gate, dgate = _bwd_inputs(
                x_ptr, z_ptr, dy_ptr, b_w, o_m, cols, m, stride_x_row, stride_z_row, stride_dy_row, HAS_Z,
                NORM_BEFORE_GATE)
            dw = _bwd_outputs(dx_ptr, dz_ptr, o_m, cols, m, stride_dx_row, stride_dz_row, b_x, b_dy, b_h, b_a, b_ag,
                              gate, dgate, rstd, mean_ahn, HAS_Z, NORM_BEFORE_GATE, dres_ptr, dh_ptr,
                              stride_dres_row, stride_dh_row, HAS_DRES, STORE_DH)
            p_dw = dw_ptr + i_split.to(tl.int64) * dim + cols
            tl.store(p_dw, tl.load(p_dw, mask=m_n, other=0.0) + dw, mask=m_n)


# Groups wider than this take the two-sweep backward (benchmarks/notes/rmsnorm_gated.md: the one-tile
# backward of a 5120-wide gated group spilled and ran at ~100 GB/s in a 2.7B training profile).
# The 2560-wide block norm stays in one tile: there it measured 398 µs a launch against the two-sweep's 577.
WIDE_GROUP = 4096
# What a call of rmsnorm_gated or add_rmsnorm takes while torch.compile traces it: "custom_op", the kernels inside
# `flashssm::rmsnorm_gated_fwd` and `flashssm::add_rmsnorm_fwd` (ops/norm/autograd.py), which read their inputs'
# strides at run time, as ssd_scan's ops do (the 130M models trained as eager with it through torch.compile and its
# CUDA graphs, seventy-second session); "kernel", the kernels' launches traced into the graph (their row strides fixed
# to the trace's: Inductor keeps only the order of a traced kernel's input strides, so an input it lays out anew would
# be read wrongly, as the conv's traced kernels were; in the 130M Mamba-2 model's compiled step the norms' came out
# right, seventy-first session, but nothing promises it); "reference", the PyTorch reference for Inductor to compile.
COMPILE_FORM = "custom_op"
# BLOCK_M rows, BLOCK_N column chunk, num_warps: one row a program keeps the rows its second sweep reads again in L2
# (at 8x4K of the 2.7B mixer, H200: 1090 us with 4 rows, 822 us with one; notes, sixty-sixth session)
WIDE_BLOCKS = (1, 1024, 8)
SPLITS_PER_SM = 4            # programs a SM (each loops over a strided share of the row blocks)
# Elements a thread loads at once in the one-tile kernels (VEC; 0: Triton's choice; None: `load_vector`'s rule).
# Triton gives each load 16 bytes a thread and then converts every tile with another element size to the widest
# load's layout through shared memory (offline, sm_90: 8-16 KB and 4-11 more barriers a tile for an fp32 x with a
# bf16 dy or y, and for the gated norm's bf16 tiles beside its fp32 weight); 4 elements a thread gives every tile one
# layout. H200, 32768 rows (benchmarks/notes/rmsnorm_gated.md, sixty-seventh session): the block norm's backward with
# x fp32 and dy bf16 443 -> 310 us, its forward to bf16 131 -> 123, the gated forward 291 -> 283; the all-bf16
# forward 105 -> 118 (so not there); the rest even.
LOAD_VECTOR = None
# The one-tile backward's group as two power-of-two tiles (`split_tile`): True, False, or None for the rule, which
# splits the fused add's backward only (684 -> 587 us at 2560 wide: 150 -> 106 registers, two programs a SM; the
# others already fit two and lose 30-45 % to the second tile's layout).
SPLIT_TILE = None
# Software pipelining of the backward kernels' loads (Triton's, by cp.async into shared memory): stages of the one-tile
# kernel's row loop and of the two-sweep kernel's column loops (1: none). H200, 32768 rows (rmsnorm_gated.md,
# sixty-seventh session): one tile at 3 stages, the fused add's backward 598 -> 358 us, the block norm's 262 -> 179
# (bf16), 336 -> 270 (fp32), 315 -> 287 (x fp32, dy bf16); the two sweeps lose (828 -> 904 at 3, 998 at 2).
TILE_STAGES = 3
WIDE_STAGES = 1
# (the stages' buffers of one program at most this, and the GPU's shared memory a block less STAGE_HEADROOM (the
# reductions' scratch, a layout conversion's 8-16 KB): past it, fewer stages)
STAGE_BYTES = 160 * 1024
STAGE_HEADROOM = 24 * 1024


@_runtime.cached(maxsize=64)
def pick_blocks(group_size: int) -> tuple[int, int, int]:
    """(BLOCK_M rows, BLOCK_N channels, num_warps): two rows of a wide group on 16 warps, else
    2048-element programs (benchmarks/notes/rmsnorm_gated.md has the sweep)."""
    block_n = _runtime.next_power_of_2(group_size)
    if block_n >= 8192:
        return 2, block_n, 16
    block_m = max(1, min(64, 2048 // block_n))
    warps = max(4, min(16, block_m * block_n // 512))
    return block_m, block_n, warps


def load_vector(block_n: int, forward: bool, has_z: bool, *tensors) -> int:
    """VEC for a one-tile launch: LOAD_VECTOR where set; else 4 (at most the tile's width), except for a forward
    without a gate whose tensors share one element size (Triton's own choice is faster there)."""
    if LOAD_VECTOR is not None:
        return min(LOAD_VECTOR, block_n)
    if forward and not has_z and len({t.element_size() for t in tensors}) == 1:
        return 0
    return min(4, block_n)


def split_tile(group_size: int, split: bool = True) -> tuple[int, int]:
    """(first tile's width, second's or 0) covering a group: with `split`, the largest power of two within it, then
    the rest's next power of two where that is narrower (2560: 2048 + 512; 5120: 4096 + 1024; 3000: 2048 + 1024),
    else one tile of the group's next power of two."""
    block = _runtime.next_power_of_2(group_size)
    if not split or block == group_size:
        return block, 0
    first = block // 2
    rest = _runtime.next_power_of_2(group_size - first)
    return (first, rest) if rest < first else (block, 0)


def _rows_view(t: torch.Tensor, dim: int) -> torch.Tensor | None:
    """t as a (rows, dim) view with unit channel stride, or None where its layout has none."""
    try:
        t2 = t.view(-1, dim)
    except RuntimeError:
        return None
    return t2 if t2.stride(1) == 1 else None


def _rows(t: torch.Tensor, dim: int) -> torch.Tensor:
    """(rows, dim) view with unit channel stride (a copy only when the layout needs one)."""
    t2 = t.reshape(-1, dim)
    return t2 if t2.stride(1) == 1 else t2.contiguous()


def rmsnorm_forward(x, weight, z, eps: float, group_size: int, norm_before_gate: bool, blocks=None, out_dtype=None,
                    residual=None, residual_dtype=None):
    """y in out_dtype (default x's); blocks: (BLOCK_M, BLOCK_N, num_warps) instead of the table's (for tuning). With
    `residual`: x + residual is formed in fp32, stored in residual_dtype and normalised as stored; returns (y, that
    sum)."""
    dim = x.shape[-1]
    x2 = _rows(x, dim)
    z2 = _rows(z, dim) if z is not None else x2
    y = _runtime.empty(x.shape, x.dtype if out_dtype is None else out_dtype, x.device)
    y2 = y.view(-1, dim)
    # An absent tensor's pointer is an input's, never an output's: under torch.compile a kernel's arguments that may
    # be written are cloned and copied back one by one, so an output passed twice could come back as the unwritten
    # clone (`tests/ops/test_compile_aliasing.py`)
    r2, s2 = x2, x2
    if residual is not None:
        r2 = _rows(residual, dim)
        s = _runtime.empty(x.shape, residual_dtype, x.device)
        s2 = s.view(-1, dim)
    n_rows = x2.shape[0]
    block_m, block_n, warps = blocks or pick_blocks(group_size)
    with _runtime.on_device(x.device):
        _runtime.launch(_rmsnorm_fwd_kernel, (_runtime.cdiv(n_rows, block_m), dim // group_size), (
            x2, z2, weight, y2, r2, s2, n_rows, group_size, eps, x2.stride(0), z2.stride(0), y2.stride(0),
            r2.stride(0), s2.stride(0)), x2.device,
            BLOCK_M=block_m, BLOCK_N=block_n, HAS_Z=z is not None, NORM_BEFORE_GATE=norm_before_gate,
            HAS_RESIDUAL=residual is not None, num_warps=warps,
            VEC=load_vector(block_n, True, z is not None, x2, y2, *((r2, s2) if residual is not None else ())),
        )
    return y if residual is None else (y, s)


def rmsnorm_backward(x, weight, z, dy, eps: float, group_size: int, norm_before_gate: bool, wide_blocks=None,
                     dres=None, dh_dtype=None, dz_out=None):
    """wide_blocks: (BLOCK_M, BLOCK_N, num_warps) of the two-sweep kernel, forcing it (tests run it at
    small widths); by default it serves groups wider than WIDE_GROUP. dres: a gradient of x from another path, added
    to dx; dh_dtype: dx also in this dtype. With either, (dx, dz, dw, that second dx or None). dz_out: a buffer of
    z's shape and dtype for dz (`grad_sink.take`), used where its rows form a (rows, dim) view."""
    dim = x.shape[-1]
    x2 = _rows(x, dim)
    z2 = _rows(z, dim) if z is not None else x2
    dy2 = _rows(dy, dim)
    n_rows = x2.shape[0]
    if wide_blocks is None and group_size > WIDE_GROUP:
        wide_blocks = WIDE_BLOCKS
    kernel = _rmsnorm_bwd_kernel if wide_blocks is None else _rmsnorm_bwd_wide_kernel
    block_m, block_n, warps = pick_blocks(group_size) if wide_blocks is None else wide_blocks
    if wide_blocks is None:
        block_n, block_b = split_tile(group_size, dres is not None if SPLIT_TILE is None else SPLIT_TILE)
        block_m = max(1, min(block_m, 2048 // block_n))  # (the table's rows are for the one tile's width)
        row_bytes = block_m * (block_n + block_b) * sum(t.element_size() for t in (x2, dy2, *(
            u for u in (z, dres) if u is not None)))
        smem = _runtime.shared_memory(x.device, on_cpu=STAGE_BYTES + STAGE_HEADROOM)
        budget = min(STAGE_BYTES, smem - STAGE_HEADROOM)
        stages = max(1, min(TILE_STAGES, budget // row_bytes))
        tiles = dict(VEC=load_vector(block_n, False, z is not None), BLOCK_B=block_b, STAGES=stages)
    else:
        tiles = dict(STAGES=WIDE_STAGES)
    n_blocks = _runtime.cdiv(n_rows, block_m)
    n_groups = dim // group_size
    n_splits = max(1, min(n_blocks, (SPLITS_PER_SM * _runtime.sm_count(x.device, on_cpu=1)) // n_groups))
    dx = _runtime.empty(x.shape, x.dtype, x.device)
    dz2 = _rows_view(dz_out, dim) if dz_out is not None else None
    if dz2 is not None:  # (the caller's buffer, where its rows form a view: no allocation of our own)
        dz = dz_out
    else:  # (without z, x stands in for dz's unused pointer: see rmsnorm_forward's s2)
        dz = _runtime.empty(z.shape, z.dtype, x.device) if z is not None else None
        dz2 = dz.view(-1, dim) if dz is not None else x2
    dw_part = (_runtime.buffer((n_splits, dim), torch.float32, x.device) if wide_blocks is None
               else torch.zeros((n_splits, dim), dtype=torch.float32, device=x.device))
    dx2 = dx.view(-1, dim)
    dres2 = _rows(dres, dim) if dres is not None else x2
    dh = _runtime.empty(x.shape, dh_dtype, x.device) if dh_dtype is not None else None
    dh2 = dh.view(-1, dim) if dh is not None else x2
    with _runtime.on_device(x.device):
        _runtime.launch(kernel, (n_splits, n_groups), (
            x2, z2, weight, dy2, dx2, dz2, dw_part, dres2, dh2, n_rows, dim, group_size, eps, n_blocks, n_splits,
            x2.stride(0), z2.stride(0), dy2.stride(0), dx2.stride(0), dz2.stride(0), dres2.stride(0), dh2.stride(0)),
            x2.device, BLOCK_M=block_m, BLOCK_N=block_n, HAS_Z=z is not None, NORM_BEFORE_GATE=norm_before_gate,
            HAS_DRES=dres is not None, STORE_DH=dh is not None, num_warps=warps, **tiles,
        )
    out = dx, (dz if z is not None else None), dw_part.sum(0).to(weight.dtype)
    return out if dres is None and dh_dtype is None else (*out, dh)


def plan_backward(x, weight, z, eps: float, group_size: int, norm_before_gate: bool, out_dtype=None) -> None:
    """Compile ahead (`_runtime.plan_ahead`) the backward of an autograd forward with these arguments:
    `rmsnorm_backward` on meta tensors, dy contiguous (as y) in y's dtype."""
    def dry_run(x, weight, z):
        dy = torch.empty(x.shape, dtype=x.dtype if out_dtype is None else out_dtype, device=x.device)
        rmsnorm_backward(x, weight, z, dy, eps, group_size, norm_before_gate)

    _runtime.plan_ahead(x.device, dry_run, x, weight, z)


class RMSNormGatedFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, z, eps, group_size, norm_before_gate, out_dtype=None):
        ctx.save_for_backward(x, weight, z)
        ctx.config = (eps, group_size, norm_before_gate)
        # where the forward compiles, the backward's kernel compiles beside it
        planner = lambda: plan_backward(x, weight, z, eps, group_size, norm_before_gate, out_dtype)  # noqa: E731
        with _runtime.compiling_ahead(planner):
            return rmsnorm_forward(x, weight, z, eps, group_size, norm_before_gate, out_dtype=out_dtype)

    @staticmethod
    @once_differentiable  # (a second derivative through the kernels raises, rather than coming out as zero)
    def backward(ctx, dy):
        x, weight, z = ctx.saved_tensors
        dz_out = grad_sink.take(z) if z is not None and ctx.needs_input_grad[2] else None
        dx, dz, dw = rmsnorm_backward(x, weight, z, dy, *ctx.config, dz_out=dz_out)
        return dx, dw, dz, None, None, None, None


def plan_add_backward(hidden, residual, weight, eps: float, residual_dtype, out_dtype) -> None:
    """`plan_backward` for `AddRMSNormFn`: its backward on meta tensors, the gradients reaching y and the sum contiguous
    in their dtypes."""
    def dry_run(hidden, weight):
        s = torch.empty(hidden.shape, dtype=residual_dtype, device=hidden.device)
        dy = torch.empty(hidden.shape, dtype=out_dtype, device=hidden.device)
        rmsnorm_backward(s, weight, None, dy, eps, hidden.shape[-1], False, dres=torch.empty_like(s),
                         dh_dtype=hidden.dtype)

    _runtime.plan_ahead(hidden.device, dry_run, hidden, weight)


class AddRMSNormFn(torch.autograd.Function):
    """(y, s): s = hidden + residual (fp32 sum, stored in residual_dtype), y = RMSNorm(s) · weight in out_dtype, in one
    launch; the backward adds the gradient reaching s from later uses to the norm's and writes hidden's in its dtype
    (and residual's, the same values), in one launch."""

    @staticmethod
    def forward(ctx, hidden, residual, weight, eps, residual_dtype, out_dtype):
        ctx.config = (eps, hidden.dtype, residual.dtype)
        planner = lambda: plan_add_backward(hidden, residual, weight, eps, residual_dtype, out_dtype)  # noqa: E731
        with _runtime.compiling_ahead(planner):
            y, s = rmsnorm_forward(hidden, weight, None, eps, hidden.shape[-1], False, out_dtype=out_dtype,
                                   residual=residual, residual_dtype=residual_dtype)
        ctx.save_for_backward(weight, s)
        return y, s

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, ds):
        weight, s = ctx.saved_tensors
        eps, hidden_dtype, residual_dtype = ctx.config
        # (autograd hands zeros for an output no later op used: ds is a tensor, as the planner assumes)
        dx, _, dw, dh = rmsnorm_backward(s, weight, None, dy, eps, s.shape[-1], False, dres=ds, dh_dtype=hidden_dtype)
        return dh, (dx if dx.dtype == residual_dtype else dx.to(residual_dtype)), dw, None, None, None


__all__ = ["AddRMSNormFn", "RMSNormGatedFn", "rmsnorm_forward", "rmsnorm_backward", "pick_blocks"]
