"""A/B of how the chain backward runs its gradient chain and D's gradient, alternating, several rounds, on the
2.7B mixer shape (bf16): "inline" (the chain inside the gradient kernel, dD summed there: the form before the
eleventh session), "dd" (dD by its own small launch), "dstates" (also the chain as a launch of its own), "default"
(what ssd_backward picks).
Prints the median backward time of each, and the largest relative difference of each gradient from inline's.

    python benchmarks/ab_chain_launch.py [ROUNDS] [--shapes 1x2048,8x4096] [--opts none,d,dz]
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward

VARIANTS = {"inline": dict(dstates=False, dd_in_kernel=True), "dd": dict(dstates=False, dd_in_kernel=False),
            "dstates": dict(dstates=True, dd_in_kernel=False), "default": {}}
NAMES = ("dx", "ddt", "dA", "dB", "dC", "dD", "dz", "ddt_bias", "dinit")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", type=int, nargs="?", default=3)
    ap.add_argument("--shapes", default="1x2048,1x8192,8x4096,1x32768")
    ap.add_argument("--opts", default="none,d,dz")
    ap.add_argument("--variants", default="inline,dd,dstates")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of this script under the interpreter, no timing")
    a = ap.parse_args()
    variants = a.variants.split(",")
    for shape in a.shapes.split(","):
        batch, seqlen = map(int, shape.split("x"))
        inp = SSDWorkload("probe", batch, seqlen, **({} if a.device == "cuda" else dict(nheads=2, dstate=16))).make_inputs(a.device)
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        h, p = x.shape[2], x.shape[3]
        gen = torch.Generator(device=a.device).manual_seed(0)
        D = torch.randn(h, device=a.device, generator=gen)
        dt_bias = torch.randn(h, device=a.device, generator=gen) * 0.5
        z = torch.randn(x.shape, device=a.device, dtype=x.dtype, generator=gen)
        dy = torch.randn(x.shape, device=a.device, dtype=x.dtype, generator=gen)
        for opt in a.opts.split(","):
            kw = {}
            if opt in ("d", "dz"):
                kw = dict(D=D, dt_bias=dt_bias, dt_softplus=True)
            dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256, D=kw.get("D"), z=z if opt == "dz" else None,
                                  dt_bias=kw.get("dt_bias"), dt_softplus=kw.get("dt_softplus", False))
            if opt == "dz":
                kw["z"] = z
                kw["ypre"] = torch.randn_like(x)

            def run(v):
                return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, form="chain", **kw, **VARIANTS[v])

            ref = run("inline")
            diffs = {}
            for v in variants:
                got = run(v)
                worst = max(((float((g.float() - r.float()).norm() / r.float().norm().clamp_min(1e-30)), n)
                             for n, g, r in zip(NAMES, got, ref) if g is not None), default=(0.0, "-"))
                diffs[v] = worst
            times = {v: [] for v in variants}
            for _ in range(a.rounds):
                for v in variants:
                    times[v].append(do_bench(lambda: run(v), warmup=10, rep=50) if a.device == "cuda" else 1.0)
            base = statistics.median(times[variants[0]])
            print(f"{shape} {opt}: " + " | ".join(
                f"{v} {statistics.median(t):.3f} ms ({statistics.median(t) / base:.3f}x; max diff {diffs[v][0]:.1e} "
                f"{diffs[v][1]})" for v, t in times.items()), flush=True)
        del x, dt, A, B, C, dy, inp, z
        if a.device == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
