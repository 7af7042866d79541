"""A/B of loads issued ahead in the selective scan, alternating in one process (medians of rounds). A variant is
`base` (nothing ahead) or a '+'-joined set of: `bc`, each slot's B and C rows loaded one slot ahead of the slot's
arithmetic (scan.BC_AHEAD_FWD / BC_AHEAD_BWD); `tile`, the backward's second pass loading the next tile's u,
delta, dy and z a tile ahead (scan.TILE_AHEAD_BWD). (`ahead` is the older name of `bc`.)
(The twentieth session's call 2 also ran a variant `dn`, the stored states as (dstate, dim) planes so that a warp's
stores and loads of them are whole sectors: the backward lost 5-9 %, and it is gone.) Per workload: the forward alone, the forward with the stored states, the backward alone
(picked configurations, or a backward segment given as NAME@SEGMENT), and the training call.

    PYTHONPATH=. python benchmarks/ab_scan_ahead.py [--variants base,bc,bc+tile] [--rounds 3] WORKLOAD ...
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from benchmarks.ab_scan_code import scan_calls
from benchmarks.tune_selective_scan import warm
from flashssm.bench.impls import _flashssm_scan_fwd, _train
from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, WORKLOADS
from flashssm.ops.selective_scan import scan


def set_variant(variant: str):
    parts = set(variant.replace("ahead", "bc").split("+")) - {"base"}
    if parts - {"bc", "tile"}:
        raise ValueError(f"unknown variant {variant!r}")
    scan.BC_AHEAD_FWD = scan.BC_AHEAD_BWD = "bc" in parts
    scan.TILE_AHEAD_BWD = "tile" in parts


def setup(spec: str):
    """Its four timed calls (three where a backward segment is given) and the backward's configuration."""
    name, _, seg = spec.partition("@")
    w = WORKLOADS[name]
    inp = w.make_inputs("cuda")
    calls, bcfg = scan_calls(inp, scan, int(seg) if seg else None)
    if not seg:
        calls["training call"] = _train(_flashssm_scan_fwd, inputs=SCAN_TRAIN_INPUTS)(w, inp)
    return calls, bcfg


def _warm_one(job):
    spec, variant = job
    try:
        set_variant(variant)
        calls, _ = setup(spec)
        for f in calls.values():
            f()
        torch.cuda.synchronize()
    except Exception as e:
        return f"{spec} {variant}: {type(e).__name__}: {str(e)[:200]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--variants", default="base,bc,bc+tile")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    variants = args.variants.split(",")
    warm([(s, v) for s in args.workloads for v in variants], _warm_one, processes=12)
    for spec in args.workloads:
        times = {}
        first = None
        calls, bcfg = setup(spec)
        for r in range(args.rounds):
            for v in variants:
                set_variant(v)
                for k, f in calls.items():
                    times.setdefault((k, v), []).append(do_bench(f))
                if r == 0:  # the gradients must not change (the change only moves loads)
                    calls["forward + states"]()
                    g = calls["backward"]()
                    first = g if first is None else first
                    diff = max(float((a.float() - b.float()).abs().max()) for a, b in zip(g, first) if a is not None)
                    print(f"  {spec} {v}: max gradient difference against {variants[0]} {diff:.1e}", flush=True)
        print(f"\n{spec}  backward {bcfg}")
        for k in calls:
            row = "  ".join(f"{v} {statistics.median(times[(k, v)]):.3f}" for v in variants)
            print(f"  {k:18s} {row}  (ms)")


if __name__ == "__main__":
    main()
