"""Compile selective_scan's forward or backward kernel for sm_90 without a GPU; print its resources
and SASS mix.

    env -u TRITON_INTERPRET python benchmarks/offline_selective_scan.py bwd [--lanes 4] [--tile 8]
        [--chunk 32] [--warps 1] [--segments] [--sass FILE]
    env -u TRITON_INTERPRET python benchmarks/offline_selective_scan.py fwd [--lanes 1] [--tile 8] ...

Specialised as the bench calls it (the loads-ahead flags as `scan`'s module flags say) on the Mamba-1 2.8B shape (dim 5120, dstate 16 unless --dstate,
bf16 u/delta/z/dout, B and C shared, D, z, delta_bias, softplus, seqlen 2048, contiguous). Registers
and spills come from ptxas, the histogram counts the SASS of the whole kernel by opcode. The local
Triton may be newer than the GPU machine's, and their register figures differ (3.9 gave the packed rows forward 164
registers where the GPU's 3.6 gave 168 and spills): run it under the GPU's version from a venv,
    python3 -m venv --system-site-packages /tmp/t36 && /tmp/t36/bin/pip install triton==3.6.0
    env -u TRITON_INTERPRET /tmp/t36/bin/python -m benchmarks.offline_selective_scan fwd --rows --lanes 2 --maxnreg 168
The figures are indicative all the same; the GPU's timing decides.
The backward takes about a minute to compile (its tiles are unrolled per slot and token).
"""

import argparse
import ast

import torch
import triton
import triton.language as tl

from benchmarks.offline_ssd_forward import compile_specialised, resource_report
from flashssm.ops.selective_scan import scan
from flashssm.ops.selective_scan.scan import _scan_bwd_kernel, _scan_fwd_kernel

BF16_PTRS = {"u_ptr", "delta_ptr", "z_ptr", "dout_ptr", "y_ptr", "du_ptr", "ddelta_ptr", "dz_ptr"}
INT_PTRS = {"seq_ptr": "*i32", "counter_ptr": "*i32", "flag_ptr": "*i32", "rows_ptr": "*i64"}


def sizes(dim, dstate, seqlen, tile, chunk, block_d):
    n_tiles = -(-seqlen // tile) + 1
    return {
        "dim": dim, "dstate": dstate, "seqlen": seqlen, "dims_per_group": dim, "ngroups": 1, "batch": 8,
        "n_tiles": n_tiles, "n_ckpt": -(-seqlen // chunk), "blocks_per_group": -(-dim // block_d),
        "stride_u_b": dim * seqlen, "stride_u_d": seqlen, "stride_u_l": 1,
        "stride_delta_b": dim * seqlen, "stride_delta_d": seqlen, "stride_delta_l": 1,
        "stride_z_b": dim * seqlen, "stride_z_d": seqlen, "stride_z_l": 1,
        "stride_y_b": dim * seqlen, "stride_y_d": seqlen, "stride_y_l": 1,
        "stride_do_b": dim * seqlen, "stride_do_d": seqlen, "stride_do_l": 1,
        "stride_o_b": dim * seqlen, "stride_o_d": seqlen, "stride_o_l": 1,
        "stride_A_d": dstate, "stride_A_n": 1, "n_seg": 1, "seg_len": seqlen, "n_programs": 1,
    }


def compile_kernel(kernel, consts, values, warps, maxnreg=None, bf16_ptrs=BF16_PTRS):
    ptr_type = lambda name: INT_PTRS.get(name, "*bf16" if name in bf16_ptrs else "*fp32")  # noqa: E731
    return compile_specialised(kernel, consts, values, ptr_type, warps, maxnreg=maxnreg)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("which", choices=("fwd", "bwd"))
    p.add_argument("--lanes", type=int)
    p.add_argument("--tile", type=int, default=8)
    p.add_argument("--chunk", type=int, default=32)
    p.add_argument("--warps", type=int, default=1)
    p.add_argument("--cpt", type=int, default=1, help="channels per thread (block_d = 32 warps cpt / lanes)")
    p.add_argument("--dstate", type=int, default=16)
    p.add_argument("--dim", type=int, default=5120)
    p.add_argument("--maxnreg", type=int)
    p.add_argument("--ckpt", action="store_true", help="forward: store the backward's checkpoints")
    p.add_argument("--segments", action="store_true", help="the sequence in segments (hand-over between programs)")
    p.add_argument("--late", action="store_true", help="forward segments: hand the state on after the output pass")
    p.add_argument("--varlen", action="store_true", help="packed sequences (the per-token sequence index)")
    p.add_argument("--rows", action="store_true", help="packed sequences as the rows of `varlen_rows` (with --segments; "
                                                       "--varlen: rows shared by short sequences, else one a row)")
    p.add_argument("--seqlen", type=int, default=2048, help="(a multiple of 16 is marked so, as the JIT does)")
    p.add_argument("--channels-last", action="store_true",
                   help="u, delta, z (and dout) as transposed (batch, seqlen, dim) tensors, as the Mamba-1 model passes "
                        "them (stride 1 along dim); y and du, ddelta, dz in the same layout (`scan.rows_like`) unless "
                        "--outputs-tokens")
    p.add_argument("--outputs-tokens", action="store_true",
                   help="with --channels-last: y and the gradients tokens contiguous (OUTPUTS_LIKE_U False)")
    p.add_argument("--sass", help="write the SASS here")
    p.add_argument("--loops", action="store_true",
                   help="each loop's instructions and spill loads and stores (where a spill sits decides its cost)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="one of scan's module switches for this compile, e.g. EDGE_TILES_BWD=False (repeatable)")
    a = p.parse_args()
    for item in a.set:
        name, _, value = item.partition("=")
        if not hasattr(scan, name):
            p.error(f"--set {item!r}: scan has no switch {name!r} (NAME=VALUE, e.g. EDGE_TILES_BWD=False)")
        try:
            setattr(scan, name, ast.literal_eval(value))
        except (ValueError, SyntaxError):
            p.error(f"--set {item!r}: the value must be a Python literal (NAME=VALUE, e.g. EDGE_TILES_BWD=False)")
    lanes = a.lanes or (4 if a.which == "bwd" else 1)
    block_d = 32 * a.warps * a.cpt // lanes
    values = sizes(a.dim, a.dstate, a.seqlen, a.tile, a.chunk, block_d)
    if a.channels_last:
        for x in ("u", "delta", "z", "do") + (() if a.outputs_tokens or not scan.OUTPUTS_LIKE_U else ("y", "o")):
            values.update({f"stride_{x}_b": a.dim * a.seqlen, f"stride_{x}_d": 1, f"stride_{x}_l": a.dim})
    if a.segments:  # (values of 1 would be specialised into constants: the kernel would not be the one that runs)
        values.update(n_seg=5, seg_len=448, n_programs=5 * (-(-a.dim // block_d)))
    # the rows' alignment the wrappers compute (`scan.row_align`), from the strides above
    rows_of = lambda *xs: [torch.empty_strided((8, a.dim, a.seqlen), [values[f"stride_{x}_{k}"] for k in "bdl"],  # noqa: E731
                                               device="meta") for x in xs]
    align_in = scan.row_align(*rows_of("u", "delta", "z", *(("do",) if a.which == "bwd" else ())))
    align_out = scan.row_align(*rows_of("o" if a.which == "bwd" else "y"), seqlen=a.seqlen)
    common = dict(BLOCK_D=block_d, NL=lanes, SLOTS=-(-a.dstate // lanes), TILE=a.tile, FAST=True, HAS_D=True,
                  HAS_Z=True, HAS_DELTA_BIAS=True, DELTA_SOFTPLUS=True, IS_VARLEN=a.varlen, SEGMENTS=a.segments,
                  ACC=tl.float32, ROWS=a.rows, ALIGN_IN=align_in, ALIGN_OUT=align_out)
    ck, ck_run = scan.ckpt_layout(a.dstate)  # the stored states' order (scan_forward and scan_backward agree on it)
    if a.which == "bwd":
        consts = dict(common, CK=ck, CK_RUN=ck_run, CHUNK=a.chunk, HAS_DLAST=False, DETERMINISTIC=False, BC_AHEAD=scan.BC_AHEAD_BWD,
                      TILE_AHEAD=scan.TILE_AHEAD_BWD, INNER=scan.INNER_CHUNKS_DENSE, TRIM=scan.EDGE_TILES_BWD,
                      CLEAN=scan.SHARED_CHUNKS_DENSE, SHARED_TOKENS=scan.SHARED_TOKENS_BWD)
        k = compile_kernel(_scan_bwd_kernel, consts, values, a.warps, a.maxnreg)
    else:
        consts = dict(common, CKPT=a.chunk, PREFETCH_BC=False, PREFETCH_TILES=2, STORE_LAST=False,
                      WINDOW=a.rows and not a.varlen and scan.WINDOW_FWD,
                      # (PEEL's rule without the lengths: with the stored states; --set PEEL_EDGE_TILES_FWD=True
                      # for the short sequences' inference form)
                      PEEL=(a.ckpt if scan.PEEL_EDGE_TILES_FWD is None else scan.PEEL_EDGE_TILES_FWD) and a.rows
                      and not a.varlen and scan.WINDOW_FWD,
                      STORE_CKPT=a.ckpt, HAND_LATE=a.late, BC_AHEAD=scan.BC_AHEAD_FWD and a.ckpt,
                      CLEAN=scan.SHARED_TILES_DENSE,
                      CK=ck if a.ckpt else 1, CK_RUN=ck_run if a.ckpt else 0, TILE_AHEAD=scan.TILE_AHEAD_FWD,
                      SPLIT_OUT=scan.SPLIT_OUT_FWD)
        # the forward's B/C tiles in the inputs' bf16 where scan_forward takes them so (BC_INPUT_DTYPE)
        k = compile_kernel(_scan_fwd_kernel, consts, values, a.warps, a.maxnreg,
                           BF16_PTRS | ({"bc_ptr"} if scan.BC_INPUT_DTYPE and (a.dstate > 16 or a.ckpt) else set()))
    mix, regs, spills = resource_report(k, ["MUFU", "FFMA", "FMUL", "FADD", "FSEL", "SEL", "SHFL", "REDG", "LDG", "STG",
                                            "LDS", "STS", "BAR", "F2F", "F2FP", "PRMT", "IMAD", "LDL", "STL", "HMMA"],
                                        a.maxnreg, a.sass, a.loops)
    print(f"{a.which} lanes {lanes} block_d {block_d} tile {a.tile} chunk {a.chunk} warps {a.warps} segments {a.segments} "
          f"varlen {a.varlen} rows {a.rows} align {align_in}/{align_out} "
          f"dstate {a.dstate} (triton {triton.__version__}): regs {regs} spill-bytes {spills} smem {k.metadata.shared} "
          f"{mix}")


if __name__ == "__main__":
    main()
