"""Sweep launch configurations of the fused SSD forward on the GPU: correctness, time, resources.

    PYTHONPATH=. python3 benchmarks/tune_ssd_forward.py [--workload NAME ...] [--hop]

Every candidate is first checked against the float64 reference on a small case, then timed
(median of do_bench) on each workload; each row gives registers, spills and shared memory from
the compiler. --hop also times the serial state hand-over alone: one small head over a long
sequence, where the time is (chunks) x (hand-over latency). Chosen entries go into pick_config.
"""

import argparse
import sys

import torch
from triton.testing import do_bench, do_bench_cudagraph

from flashssm.bench.floors import floor_s
from flashssm.bench.measure import measure_ceilings
from flashssm.bench.workloads import WORKLOADS, SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd.forward import LaunchConfig, launch, pick_config
from flashssm.ops.ssd.reference import ssd_scan_chunked

ARGS = ("x", "dt", "A", "B", "C")
CANDIDATES = [  # sub, block_p, warps, stages, maxnreg, m_split, group (chunks per program), L2 prefetch, sub_a, pre_decays
    (64, 64, 4, 2, None, True, 1, False, None, False), (64, 64, 4, 2, None, True, 8, False, None, False),
    (64, 64, 4, 2, None, True, 8, True, None, False), (64, 64, 4, 2, None, False, 8, False, None, False),
    (32, 64, 4, 3, None, True, 8, False, None, False), (64, 64, 8, 2, None, True, 8, False, None, False),
    (64, 64, 4, 2, None, True, 8, True, None, True), (64, 64, 8, 2, None, True, 8, True, None, True),
]


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


GRAPH = False  # --graph: GPU time alone (a CUDA graph of the launch: no host path in the figure)


def time_config(inp, chunk, cfg, state_dtype):
    dims = check_ssd_scan(*(inp[k] for k in ARGS), chunk_size=chunk)
    fn = lambda: launch(dims, *(inp[k] for k in ARGS), config=cfg, state_dtype=state_dtype)  # noqa: E731
    if GRAPH:
        return do_bench_cudagraph(fn, rep=200, return_mode="median")
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--state-dtype", default="float32")
    parser.add_argument("--hop", action="store_true")
    parser.add_argument("--candidate", action="append",
                        help="sub,block_p,warps,stages,maxnreg(0: none),split(0|1)[,group[,prefetch(0|1)[,sub_a(0: "
                        "sub)[,pre_decays(0|1)]]]]; "
                        "replaces the built-in list")
    parser.add_argument("--mode", choices=("both", "early", "late"), default="both")
    parser.add_argument("--check-only", action="store_true", help="the correctness check, no timing")
    parser.add_argument("--graph", action="store_true", help="time a CUDA graph of each call: GPU time without "
                        "the host path (small workloads are host-bound otherwise)")
    args = parser.parse_args()
    global GRAPH
    GRAPH = args.graph
    candidates = CANDIDATES
    if args.candidate:
        candidates = [tuple(int(v) for v in c.split(",")) for c in args.candidate]
        candidates = [(c[0], c[1], c[2], c[3], c[4] or None, bool(c[5]), c[6] if len(c) > 6 else 1,
                       bool(c[7]) if len(c) > 7 else False, (c[8] or None) if len(c) > 8 else None,
                       bool(c[9]) if len(c) > 9 else False) for c in candidates]
    state_dtype = getattr(torch, args.state_dtype)
    names = args.workload or ["2.7b-1x32K", "2.7b-8x4K"]
    if not args.check_only:
        ceilings = measure_ceilings(torch.device("cuda"))
        print(f"copy {ceilings.copy_bytes_per_s / 1e12:.2f} TB/s, gemm {ceilings.gemm_flops_per_s / 1e12:.0f} TF/s")
    if args.hop:
        for chunk in (64, 256):
            w = SSDWorkload("hop", 1, 1 << 19, nheads=1, headdim=32, dstate=16, chunk_size=chunk)
            inp = w.make_inputs("cuda")
            dims = check_ssd_scan(*(inp[k] for k in ARGS), chunk_size=chunk)
            cfg = pick_config(dims, torch.bfloat16, torch.device("cuda"))
            t = time_config(inp, chunk, cfg, state_dtype)
            n = (1 << 19) // chunk
            print(f"hand-over chain: 1 head, chunk {chunk}: {t:.3f} ms for {n} chunks = {1e3 * t / n:.2f} us a chunk",
                  flush=True)
    check = WORKLOADS["accuracy-2x1K"].make_inputs("cuda", seed=1)
    ref_y = ssd_scan_chunked(*(check[k].double() for k in ARGS), chunk_size=256)[0]
    cases = {} if args.check_only else {n: WORKLOADS[n].make_inputs("cuda", seed=0) for n in names}
    rows = []
    modes = {"both": (True, False), "early": (True,), "late": (False,)}[args.mode]
    for early in modes:
        for sub, bp, warps, stages, maxnreg, split, group, pf, sub_a, pre in candidates:
            cfg = LaunchConfig(sub, bp, warps, stages, early, maxnreg, split, prefetch=pf, group=group, sub_a=sub_a,
                               pre_decays=pre)
            try:
                dims = check_ssd_scan(*(check[k] for k in ARGS), chunk_size=256)
                y, _, _, kern = launch(dims, *(check[k] for k in ARGS), config=cfg, state_dtype=state_dtype)
                err = rel(y, ref_y)
                res = f"regs {kern.n_regs:3d} spills {kern.n_spills:4d} smem {kern.metadata.shared // 1024:3d}K"
                torch.cuda.synchronize()
                if args.check_only:
                    print(f"{cfg}: err {err:.2e} {res}", flush=True)
                    continue
                times = [time_config(cases[n], WORKLOADS[n].chunk_size, cfg, state_dtype) for n in names]
            except Exception as e:  # a config that does not compile is a row, not the end
                print(f"{cfg}: {type(e).__name__}: {str(e)[:160]}", flush=True)
                continue
            floors = [floor_s(WORKLOADS[n], ceilings)[0] * 1e3 for n in names]
            line = (f"{'early' if early else 'late '} sub {sub:3d} bp {bp:3d} w {warps} st {stages} "
                    f"maxnreg {maxnreg or '-':>3} {'split' if split else 'tf32 '} group {group} pf {int(pf)} "
                    f"sub_a {sub_a or sub} pre {int(pre)} | err {err:.2e} | {res} | "
                    + " | ".join(f"{n} {t:.3f} ms ({t / f:.2f}x)" for n, t, f in zip(names, times, floors)))
            rows.append((times, line))
            print(line, flush=True)
    if args.check_only:
        return 0
    for i, n in enumerate(names):
        print(f"\nbest for {n}:")
        for _, line in sorted(rows, key=lambda r: r[0][i])[:4]:
            print(line)
    for n in names:
        dims = check_ssd_scan(*(cases[n][k] for k in ARGS), chunk_size=WORKLOADS[n].chunk_size)
        print(f"pick_config({n}) = {pick_config(dims, torch.bfloat16, torch.device('cuda'))}")


if __name__ == "__main__":
    sys.exit(main())
