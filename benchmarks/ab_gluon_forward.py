"""A/B of the SSD forward: the Gluon kernel (forward_gluon.py) against the Triton kernel, in one process.

    PYTHONPATH=. python3 benchmarks/ab_gluon_forward.py [--workload 2.7b-8x4K ...] [--rounds 5] [--groups 2,4]

Both through `forward.launch` with the package's configuration for the shape (`LaunchConfig.gluon` False forces the
Triton kernel), alternating, medians of `rounds` do_bench medians; y's largest difference between the two is printed
beside (late publish: the same arithmetic, 0 or a few rounding flips; early: other roundings of the own state).
`--groups`: the Gluon kernel also at other spans (chunks a program) than the package's table picks.
"""

import argparse
import dataclasses

from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--groups", default="", help="also time the Gluon kernel at these chunks a program, e.g. 2,4")
    args = parser.parse_args()
    for name in args.workload or ["2.7b-8x4K", "2.7b-32x2K"]:
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        dims = check_ssd_scan(**inp, chunk_size=w.chunk_size)
        cfg = forward.pick_config(dims, inp["x"].dtype, inp["x"].device)
        why = forward.gluon_blocker(dims, inp["x"], inp["B"], inp["C"], inp.get("z"))
        if why:
            print(f"{name}: the Gluon kernel does not take it ({why})")
            continue
        calls = {"triton": dataclasses.replace(cfg, gluon=False), "gluon": cfg}
        for g in (int(v) for v in args.groups.split(",") if v):
            if g != cfg.group:
                calls[f"gluon-G{g}"] = dataclasses.replace(cfg, group=g)
        fns = {k: (lambda c: lambda: forward.launch(dims, **inp, config=c)[0])(c) for k, c in calls.items()}
        diff = (fns["gluon"]().float() - fns["triton"]().float()).abs().max().item()
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                times[k].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
        med = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
        print(f"{name} (group {cfg.group}): triton {med['triton']:.4f} ms, gluon {med['gluon']:.4f} ms "
              f"({med['gluon'] / med['triton'] - 1:+.1%}), max |diff| {diff:.1e}"
              + "".join(f", {k} {med[k]:.4f}" for k in med if k.startswith("gluon-")), flush=True)


if __name__ == "__main__":
    main()
