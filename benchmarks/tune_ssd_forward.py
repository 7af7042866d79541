"""Sweep launch configurations of the fused SSD forward on the GPU: correctness, time, resources.

    PYTHONPATH=. python3 benchmarks/tune_ssd_forward.py [--quick] [--workload NAME ...]

Every configuration is first checked against the float64 reference on a small case, then timed
(median of do_bench) on each workload; the table gives registers, spills and shared memory
from the compiler. The chosen entries go into pick_config's table by hand.
"""

import argparse
import itertools
import sys

import torch
from triton.testing import do_bench

from flashssm.bench.floors import ssd_floor_s
from flashssm.bench.measure import measure_ceilings
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd.forward import LaunchConfig, launch, pick_config
from flashssm.ops.ssd.reference import ssd_scan_chunked


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--sub", type=int, nargs="*", default=[32, 64])
    parser.add_argument("--block-p", type=int, nargs="*", default=[32, 64])
    parser.add_argument("--warps", type=int, nargs="*", default=[4, 8])
    parser.add_argument("--stages", type=int, nargs="*", default=[1, 2, 3])
    parser.add_argument("--state-dtype", default="float32")
    args = parser.parse_args()
    state_dtype = getattr(torch, args.state_dtype)
    names = args.workload or ["2.7b-1x32K", "2.7b-8x4K"]
    ceilings = measure_ceilings(torch.device("cuda"))
    print(f"copy {ceilings.copy_bytes_per_s / 1e12:.2f} TB/s, gemm {ceilings.gemm_flops_per_s / 1e12:.0f} TF/s")
    # small correctness case on the 2.7B head shape
    check = WORKLOADS["accuracy-2x1K"].make_inputs("cuda", seed=1)
    ref_y = ssd_scan_chunked(*(check[k].double() for k in ("x", "dt", "A", "B", "C")), chunk_size=256)[0]
    cases = {n: WORKLOADS[n].make_inputs("cuda", seed=0) for n in names}
    default = None
    rows = []
    configs = [LaunchConfig(s, p, w, st) for s, p, w, st in
               itertools.product(args.sub, args.block_p, args.warps, args.stages)]
    for cfg in configs:
        try:
            dims = check_ssd_scan(*(check[k] for k in ("x", "dt", "A", "B", "C")), chunk_size=256)
            y, _, kern = launch(dims, *(check[k] for k in ("x", "dt", "A", "B", "C")), config=cfg,
                                state_dtype=state_dtype)
            err = rel(y, ref_y)
            res = f"regs {kern.n_regs:3d} spills {kern.n_spills:4d} smem {kern.metadata.shared // 1024:3d}K"
        except Exception as e:  # a config that does not compile is a row, not the end
            print(f"{cfg}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        times = []
        for n in names:
            w, inp = WORKLOADS[n], cases[n]
            dims = check_ssd_scan(*(inp[k] for k in ("x", "dt", "A", "B", "C")), chunk_size=w.chunk_size)
            fn = lambda: launch(dims, *(inp[k] for k in ("x", "dt", "A", "B", "C")), config=cfg,  # noqa: E731
                                state_dtype=state_dtype)
            t = do_bench(fn, warmup=25, rep=200, return_mode="median")
            times.append((t, t / (ssd_floor_s(w, ceilings)[0] * 1e3)))
        line = (f"sub {cfg.sub:3d} bp {cfg.block_p:3d} w {cfg.num_warps} st {cfg.num_stages} | err {err:.2e} | {res} | "
                + " | ".join(f"{n} {t:.3f} ms ({x:.2f}x floor)" for n, (t, x) in zip(names, times)))
        rows.append((sum(t for t, _ in times), line))
        print(line, flush=True)
        if cfg == pick_config(dims, torch.bfloat16, torch.device("cuda")):
            default = line
    print("\nbest first:")
    for _, line in sorted(rows)[:8]:
        print(line)
    print("current default:", default)


if __name__ == "__main__":
    sys.exit(main())
