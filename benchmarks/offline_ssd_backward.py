"""Compile the recurrent SSD backward's gradient kernel for sm_90 without a GPU; print its resources
and SASS mix.

    env -u TRITON_INTERPRET python -m benchmarks.offline_ssd_backward [--sub 16] [--warps 4]
        [--mode round|split|tf32] [--split-mask M] [--early] [--given] [--z] [--d [--dd-in-kernel]] [--sass FILE]

Specialised as the train bench calls it on the 2.7B shape (bf16 x/B/C/dout, fp32 dt, contiguous,
8x4K: late publish unless --early; every gradient wanted, no D/z unless asked). Registers and spills
come from ptxas, the histogram counts the SASS of the whole kernel by opcode. The local Triton may be
newer than the GPU machine's: the figures are indicative, the GPU's timing decides.
"""

import argparse

from benchmarks.offline_ssd_forward import STRIDES, compile_specialised, resource_report
from flashssm.ops.ssd.backward_chain import ROUND, SPLIT, SPLIT_ALL, TF32, _dstates_kernel, _ssd_bwd_kernel
from flashssm.ops.ssd.backward_tiles import TILES_SPLIT_DEFAULT, _tiles_bc_kernel, _tiles_kernel, _tiles_paths_kernel

SIZES = {"batch": 8, "seqlen": 4096, "nheads": 80, "headdim": 64, "dstate": 128, "heads_per_group": 80,
         "n_rows": 128, "n_programs": 128 * 80}
BWD_STRIDES = {
    **STRIDES,
    "stride_do_b": 4096 * 5120, "stride_do_t": 5120, "stride_do_h": 64, "stride_do_p": 1,
    "stride_yp_b": 4096 * 5120, "stride_yp_t": 5120, "stride_yp_h": 64, "stride_yp_p": 1,
    "stride_dB_b": 4096 * 128, "stride_dB_t": 128, "stride_dB_g": 128,
}
BF16_PTRS = {"x_ptr", "B_ptr", "C_ptr", "z_ptr", "dout_ptr", "ypre_ptr", "dx_ptr", "dz_ptr"}
INT_PTRS = {"counter_ptr": "*i32", "flag_ptr": "*i32", "table_ptr": "*i64"}
MODES = {"round": ROUND, "split": SPLIT, "tf32": TF32}  # --mode


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sub", type=int, help="tokens a sub-chunk (the sweeps: 16; --chain: 128, with --d 64)")
    p.add_argument("--warps", type=int, default=4)
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--mode", choices=("round", "split", "tf32"), default="tf32")
    p.add_argument("--early", action="store_true")
    p.add_argument("--z", action="store_true")
    p.add_argument("--d", action="store_true")
    p.add_argument("--dt-bias", action="store_true")
    p.add_argument("--softplus", action="store_true")
    p.add_argument("--maxnreg", type=int)
    p.add_argument("--split-mask", type=int, default=SPLIT_ALL, help="split: the products that split (SPLIT_MASK)")
    p.add_argument("--given", action="store_true", help="dH after each chunk read from the chain's own launch")
    p.add_argument("--dd-in-kernel", action="store_true", help="D's gradient summed in the kernel (with --d)")
    p.add_argument("--pre-cs", action="store_true", help="--tiles: cs loaded (written by the preparation launch)")
    p.add_argument("--sass", help="write the SASS here")
    p.add_argument("--chunk", type=int, default=256, help="--tiles: the chunk size the tiles run in")
    p.add_argument("--tiles", action="store_true", help="the gradient launch in tiles (backward_tiles), not the sweeps")
    p.add_argument("--tile", type=int, default=64, help="--tiles: tokens a block")
    p.add_argument("--pairs", action="store_true",
                   help="--tiles: the pair launch (_tiles_bc_kernel), all 80 heads a program")
    p.add_argument("--paths", action="store_true",
                   help="--tiles: the paths launch (_tiles_paths_kernel), all 80 heads a program")
    p.add_argument("--no-paths", action="store_true",
                   help="--tiles: the tiles kernel without the paths (PATHS False: the paths launch takes them)")
    p.add_argument("--wide-states", dest="narrow", action="store_false",
                   help="--tiles: H and dH in fp32 (as before the thirteenth session), not bf16")
    p.add_argument("--fp16", action="store_true",
                   help="fp16 inputs instead of bf16 (with --tiles, take --wide-states: fp16's tiles keep fp32 states)")
    p.add_argument("--const", action="append", default=[], metavar="NAME=INT",
                   help="a constexpr of the kernel set to an int (K_HALVES=1, PAIR_MODE=1, COL_SUMS=0, ...)")
    p.add_argument("--chain", action="store_true",
                   help="the chain launch (_dstates_kernel) as 8x4K takes it: late spans of 8 chunks, sub-chunks of "
                        "128, the carry, bf16 states (--const NAME=INT sets a constexpr; --d: D's share, dt_bias and "
                        "softplus)")
    a = p.parse_args()
    if a.chain:
        return chain(a)
    if a.tiles:
        return pairs(a) if a.pairs else paths(a) if a.paths else tiles(a)
    mode = MODES[a.mode]
    a.sub = a.sub or 16
    consts = dict(CHUNK=256, SUB=a.sub, BLOCK_P=64, BLOCK_N=128, HAS_D=a.d, HAS_Z=a.z, HAS_DT_BIAS=a.dt_bias,
                  DT_SOFTPLUS=a.softplus, HAS_INIT=False, HAS_DFINAL=False, IS_VARLEN=False, EARLY_PUBLISH=a.early,
                  DOT_PRECISION="tf32", MODE=mode, SPLIT_MASK=a.split_mask, NEED_DX=True, NEED_DDT=True, NEED_DB=True, NEED_DC=True,
                  NEED_DZ=a.z, NEED_DINIT=False, DH_GIVEN=a.given, DD_IN_KERNEL=a.dd_in_kernel)
    consts.update(_const_args(a, _ssd_bwd_kernel))
    half = "*fp16" if a.fp16 else "*bf16"
    ptr_type = lambda name: INT_PTRS.get(name, half if name in BF16_PTRS else "*fp32")  # noqa: E731
    k = compile_specialised(_ssd_bwd_kernel, consts, {**BWD_STRIDES, **SIZES}, ptr_type, a.warps, stages=a.stages,
                            maxnreg=a.maxnreg, floats=("dt_lo", "dt_hi"))
    mix, regs, spills = resource_report(k, ["HMMA", "HGMMA", "MUFU", "F2F", "FFMA", "FMUL", "SHFL", "REDG", "RED", "LDG",
                                            "STG", "LDS", "STS", "LDSM", "BAR", "F2FP", "LDL", "STL"],
                                        a.maxnreg, a.sass)
    opts = "".join(f" {n}" for n, on in (("D", a.d), ("z", a.z), ("dt_bias", a.dt_bias), ("softplus", a.softplus)) if on)
    opts += " given" * a.given + " dD-in-kernel" * a.dd_in_kernel
    print(f"chain bwd{opts} mode {a.mode} mask {a.split_mask} sub {a.sub} warps {a.warps} stages {a.stages}: regs {regs} spill-bytes {spills} "
          f"smem {k.metadata.shared} {mix}")



OPS = ["HMMA", "HGMMA", "MUFU", "F2F", "FFMA", "FMUL", "SHFL", "REDG", "RED", "LDG", "STG", "LDS", "STS", "LDSM", "BAR",
       "F2FP", "LDL", "STL"]


def _const_args(a, kernel) -> dict:
    """--const NAME=INT, each a constexpr of the kernel compiled (a clear error for any other)."""
    out = {}
    for c in a.const:
        name, eq, value = c.partition("=")
        if not eq or not value.lstrip("-").isdigit():
            raise SystemExit(f"--const: expected NAME=INT, got {c!r}")
        if name not in kernel.arg_names:
            raise SystemExit(f"--const: {kernel.fn.__name__} has no parameter {name}")
        out[name] = int(value)
    return out


def chain(a):
    """The chain launch (_dstates_kernel), late form, as the chain backward launches it at 8x4K of the 2.7B shape."""
    mode = MODES[a.mode]
    consts = dict(CHUNK=2048, SUB=a.sub or (64 if a.d else 128), BLOCK_P=64, BLOCK_N=128, HAS_Z=False,
                  HAS_DT_BIAS=False, DT_SOFTPLUS=False, HAS_DFINAL=False, IS_VARLEN=False, NEED_DZ=False,
                  NEED_DINIT=False, DOT_PRECISION="tf32", MODE=mode, STORE_DY=False, ROUND_DY=True, NEED_DD=False,
                  LATE=True, STATE_CHUNK=128, HALVES=False, CARRY=True)
    if a.d:  # D's share summed on the way (a Mamba-2 layer's call), dt_bias and softplus as it passes them
        consts.update(NEED_DD=True, HAS_DT_BIAS=True, DT_SOFTPLUS=True)
    consts.update(_const_args(a, _dstates_kernel))
    sizes = {**SIZES, "n_rows": 16, "n_programs": 16 * 80}
    strides = {**BWD_STRIDES, "stride_df_s": 80 * 64 * 128, "stride_df_h": 64 * 128, "stride_df_p": 128,
               "stride_df_n": 1}
    bf16 = {"C_ptr", "z_ptr", "dout_ptr", "ypre_ptr", "dy_ptr", "dz_ptr", "x_ptr", "dstates_ptr", "states_ptr"}
    half = "*fp16" if a.fp16 else "*bf16"
    ptr_type = lambda name: INT_PTRS.get(name, half if name in bf16 else "*fp32")  # noqa: E731
    k = compile_specialised(_dstates_kernel, consts, {**strides, **sizes}, ptr_type, a.warps, stages=a.stages,
                            maxnreg=a.maxnreg, floats=("dt_lo", "dt_hi"))
    mix, regs, spills = resource_report(k, OPS + ["CCTL"], a.maxnreg, a.sass)
    print(f"chain late mode {a.mode} {' '.join(a.const)}: regs {regs} spill-bytes {spills} smem {k.metadata.shared} "
          f"| {mix}")


def tiles(a):
    """The tiles kernel, as the chain backward launches it on the 2.7B shape (dy as x, dH given)."""
    mode = MODES[a.mode]
    mask = TILES_SPLIT_DEFAULT if a.split_mask == SPLIT_ALL else a.split_mask
    consts = dict(CHUNK=a.chunk, T=a.tile, BLOCK_P=64, BLOCK_N=128, HAS_D=a.d, HAS_INIT=False, IS_VARLEN=False,
                  DOT_PRECISION="tf32", MODE=mode, SPLIT_MASK=mask, NEED_DX=True, NEED_DA=True, NEED_DB=True,
                  NEED_DC=True, PATHS=not a.no_paths, PRE_CS=a.pre_cs)
    narrow = {"states_ptr", "dstates_ptr"} if a.narrow else set()
    report = _tiles_compile(_tiles_kernel, consts, {}, {"dx_ptr"} | narrow, a)
    print(f"tiles{' D' * a.d} Q {a.chunk} mode {a.mode} mask {mask} T {a.tile} warps {a.warps} stages {a.stages}: {report}")


def pairs(a):
    """The tiles' pair launch, as the chain backward launches it on the 2.7B shape at 8x4K (80 heads a program)."""
    mode = MODES[a.mode]
    consts = dict(CHUNK=256, T=a.tile, BLOCK_P=64, BLOCK_N=128, IS_VARLEN=False, DOT_PRECISION="tf32", MODE=mode,
                  SPLIT_MASK=TILES_SPLIT_DEFAULT, NEED_DA=True, NEED_DB=True, NEED_DC=True)
    report = _tiles_compile(_tiles_bc_kernel, consts, {"ngroups": 1, "heads_per_prog": 80, "n_hblocks": 1}, set(), a)
    print(f"pairs mode {a.mode} T {a.tile} warps {a.warps} stages {a.stages}: {report}")


def paths(a):
    """The tiles' paths launch, as the chain backward launches it on the 2.7B shape at 8x4K (80 heads a program)."""
    mode = MODES[a.mode]
    consts = dict(CHUNK=256, T=a.tile, BLOCK_P=64, BLOCK_N=128, HAS_INIT=False, IS_VARLEN=False, DOT_PRECISION="tf32",
                  MODE=mode, SPLIT_MASK=TILES_SPLIT_DEFAULT, NEED_DA=True, NEED_DB=True, NEED_DC=True)
    narrow = {"states_ptr", "dstates_ptr"} if a.narrow else set()
    report = _tiles_compile(_tiles_paths_kernel, consts, {"ngroups": 1, "heads_per_prog": 80, "n_hblocks": 1}, narrow,
                            a)
    print(f"paths mode {a.mode} T {a.tile} warps {a.warps} stages {a.stages}: {report}")


def _tiles_compile(kernel, consts, extra, more_bf16, a):
    """Compile one of backward_tiles' kernels for sm_90 at 8x4K of the 2.7B shape; its resources as a line."""
    consts = {**consts, **_const_args(a, kernel)}
    strides = {**BWD_STRIDES, "stride_dy_b": 4096 * 5120, "stride_dy_t": 5120, "stride_dy_h": 64, "stride_dy_p": 1,
               "plane": 128 * 80 * 256, **extra}
    bf16 = {"x_ptr", "B_ptr", "C_ptr", "dy_ptr"} | more_bf16
    half = "*fp16" if a.fp16 else "*bf16"
    ptr_type = lambda name: INT_PTRS.get(name, half if name in bf16 else "*fp32")  # noqa: E731
    k = compile_specialised(kernel, consts, {**strides, **SIZES}, ptr_type, a.warps, stages=a.stages,
                            maxnreg=a.maxnreg)
    mix, regs, spills = resource_report(k, OPS, a.maxnreg, a.sass)
    return f"regs {regs} spill-bytes {spills} smem {k.metadata.shared} | {mix}"


if __name__ == "__main__":
    main()
