"""Sweep the two-sweep gated-norm backward's blocks at the Mamba-2 2.7B mixer's shape (8x4K tokens, bf16, one group
of 5120 with its z gate), beside mamba_ssm's backward of the same norm when it is installed.

    PYTHONPATH=. python3 benchmarks/tune_rmsnorm_bwd.py [--rows 32768] [--width 5120]

Per configuration (BLOCK_M rows, BLOCK_N column chunk, num_warps) of `_rmsnorm_bwd_wide_kernel`: do_bench's median
(us), the bytes a one-pass backward must move (read x, z, dy; write dx, dz) over that time, and dx, dz, dw's largest
difference from the table's configuration (the same arithmetic: 0, or the dw partials' other order).
"""

import argparse
import itertools

import torch
from triton.testing import do_bench

from flashssm.ops.norm import rmsnorm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=8 * 4096)
    parser.add_argument("--width", type=int, default=5120)
    parser.add_argument("--blocks", action="append", default=[], help="only these BLOCK_M,BLOCK_N,warps (repeat)")
    parser.add_argument("--splits", default="", help="also each of these programs a SM (SPLITS_PER_SM), e.g. 2,8")
    args = parser.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, z, dy = (torch.randn(args.rows, args.width, device="cuda", generator=gen).bfloat16() for _ in range(3))
    w = torch.randn(args.width, device="cuda", generator=gen)
    nbytes = x.numel() * 2 * 5
    bench = lambda fn: do_bench(fn, warmup=25, rep=200, return_mode="median")  # noqa: E731
    base = rmsnorm.rmsnorm_backward(x, w, z, dy, 1e-5, args.width, False)
    t = bench(lambda: rmsnorm.rmsnorm_backward(x, w, z, dy, 1e-5, args.width, False))
    print(f"table {rmsnorm.WIDE_BLOCKS} x {rmsnorm.SPLITS_PER_SM} a SM: {t * 1e3:7.1f} us, "
          f"{nbytes / t / 1e6:5.0f} GB/s", flush=True)
    try:  # (mamba_ssm's package imports its CUDA extension first: the module is loaded from its file alone)
        import importlib.util

        spec = importlib.util.find_spec("mamba_ssm")
        if spec is None:
            raise ImportError("no mamba_ssm")
        path = spec.submodule_search_locations[0] + "/ops/triton/layernorm_gated.py"
        mod_spec = importlib.util.spec_from_file_location("mamba_layernorm_gated", path)
        mod = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(mod)
        _layer_norm_bwd, _layer_norm_fwd = mod._layer_norm_bwd, mod._layer_norm_fwd

        _, mean, rstd = _layer_norm_fwd(x, w, None, 1e-5, z=z, group_size=args.width, norm_before_gate=False,
                                        is_rms_norm=True)
        fn = lambda: _layer_norm_bwd(dy, x, w, None, 1e-5, mean, rstd, z=z, group_size=args.width,  # noqa: E731
                                     norm_before_gate=False, is_rms_norm=True)
        t = bench(fn)
        print(f"mamba_ssm _layer_norm_bwd: {t * 1e3:7.1f} us, {nbytes / t / 1e6:5.0f} GB/s", flush=True)
    except ImportError as e:
        print(f"mamba_ssm not importable: {e}")
    grid = [tuple(int(v) for v in b.split(",")) for b in args.blocks] or [
        (bm, bn, warps) for bm, bn, warps in itertools.product((1, 2, 4, 8), (512, 1024, 2048), (4, 8, 16))
        if 4 <= bm * bn // (32 * warps) <= 64]
    saved = rmsnorm.SPLITS_PER_SM
    for splits in [saved] + [int(v) for v in args.splits.split(",") if v]:
        rmsnorm.SPLITS_PER_SM = splits
        for bm, bn, warps in grid:
            fn = lambda: rmsnorm.rmsnorm_backward(x, w, z, dy, 1e-5, args.width, False,  # noqa: E731
                                                  wide_blocks=(bm, bn, warps))
            out = fn()
            diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(out, base))
            t = bench(fn)
            print(f"({bm}, {bn}, {warps}) x {splits} a SM: {t * 1e3:7.1f} us, {nbytes / t / 1e6:5.0f} GB/s, "
                  f"max diff {diff:.1e}", flush=True)
    rmsnorm.SPLITS_PER_SM = saved


if __name__ == "__main__":
    main()
