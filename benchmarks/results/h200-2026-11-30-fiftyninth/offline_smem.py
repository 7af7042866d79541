"""Shared memory of the SSD backward's parallel-form launches (the deterministic mode's form where the tiles cannot
run it), compiled for sm_90 without a GPU, over the shapes the issue admits: a launch over the GPU's 227 KB a block
fails at launch with Triton's OutOfResources (fifty-ninth session: fuzz case 3025600353, fp32, headdim 128, dstate
256). Configurations as `ssd_backward_parallel` picks them; one line a (launch, dtype, headdim block, dstate block,
chunk).

    PYTHONPATH=. env -u TRITON_INTERPRET /tmp/t36/bin/python RESULTS/offline_smem.py [--dtypes fp32,bf16] [--chunks 64]

(RESULTS: benchmarks/results/h200-2026-11-30-fiftyninth.) A record of the survey the session ran: its configurations
are copied from `ssd_backward_parallel` as it stood then; `benchmarks/launch_smem.py` compiles the launches a call
really makes, and is the tool to use.
"""
import argparse

import torch

from benchmarks.offline_ssd_forward import compile_specialised
from flashssm.ops.ssd import backward as bw
from flashssm.ops.ssd.forward import _pick_config

LIMIT = 232448  # bytes of shared memory a block may take on sm_90 (227 KB)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
TRITON_TYPE = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def launches(dtype, block_p, block_n, chunk):
    """(name, kernel, constexprs, warps, stages, the input-dtype pointers) as ssd_backward_parallel launches them."""
    sixteen = dtype != torch.float32
    mode = bw.SPLIT if sixteen else bw.ROUND
    tile = min(64 if sixteen else 32, chunk)
    w_states = 4 if block_n * block_p <= 8192 else 8
    precision = "tf32x3" if dtype == torch.float32 else "tf32"
    sub = _pick_config(block_p, block_n, chunk, dtype.itemsize, False).sub
    common = dict(CHUNK=chunk, T=tile, BLOCK_P=block_p, BLOCK_N=block_n, HAS_INIT=True, IS_VARLEN=False,
                  DOT_PRECISION=precision, MODE=mode)
    return [
        ("dstates", bw._dstates_kernel, dict(CHUNK=chunk, SUB=sub, BLOCK_P=block_p, BLOCK_N=block_n, HAS_Z=False,
                                             HAS_DT_BIAS=True, DT_SOFTPLUS=True, HAS_DFINAL=True, IS_VARLEN=False,
                                             NEED_DZ=False, NEED_DINIT=True, DOT_PRECISION=precision, MODE=mode),
         w_states, 2, {"C_ptr", "z_ptr", "dout_ptr", "ypre_ptr", "dy_ptr", "dz_ptr", "x_ptr"}),
        ("cb", bw._cb_kernel, dict(CHUNK=chunk, T=tile, BLOCK_N=block_n, IS_VARLEN=False, DOT_PRECISION=precision),
         4, None, {"B_ptr", "C_ptr"}),
        ("dx", bw._dx_kernel, dict(common, HAS_D=True, HAS_DT_BIAS=True, DT_SOFTPLUS=True, NEED_DX=True,
                                   NEED_DA=True, N_SPLIT=bw._dx_split(block_n, block_p, dtype.itemsize)),
         4, 1, {"x_ptr", "B_ptr", "C_ptr", "dy_ptr", "dx_ptr"}),
        ("dbc", bw._dbc_kernel, dict(common, MODE=bw.ROUND if mode == bw.SPLIT else mode), 8, 2,
         {"x_ptr", "B_ptr", "C_ptr", "dy_ptr"}),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtypes", default="fp32,bf16,fp16")
    p.add_argument("--chunks", default="64,128,256")
    p.add_argument("--blocks", default="64x64,64x128,64x256,128x64,128x128,128x256",
                   help="headdim block x dstate block pairs")
    args = p.parse_args()
    for dname in args.dtypes.split(","):
        dtype = DTYPES[dname]
        for pair in args.blocks.split(","):
            block_p, block_n = map(int, pair.split("x"))
            for chunk in map(int, args.chunks.split(",")):
                for name, kernel, consts, warps, stages, narrow in launches(dtype, block_p, block_n, chunk):
                    def ptr_type(arg, narrow=narrow):
                        if arg == "table_ptr":
                            return "*i64"
                        if arg in ("counter_ptr", "flag_ptr"):
                            return "*i32"
                        return "*" + (TRITON_TYPE[dtype] if arg in narrow else "fp32")
                    try:
                        k = compile_specialised(kernel, consts, {}, ptr_type, warps, stages,
                                                floats=("dt_lo", "dt_hi"))
                        shared = k.metadata.shared
                        flag = "  OVER" if shared > LIMIT else ""
                        print(f"{name:8s} {dname} P{block_p} N{block_n} Q{chunk}: {shared} B{flag}", flush=True)
                    except Exception as err:  # a compile failure is a finding too
                        print(f"{name:8s} {dname} P{block_p} N{block_n} Q{chunk}: failed {type(err).__name__}: "
                              f"{str(err).splitlines()[0][:120]}", flush=True)


if __name__ == "__main__":
    main()
