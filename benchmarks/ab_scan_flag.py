"""A/B of one of the selective scan's module switches (a boolean in `scan`, e.g. BC_INPUT_DTYPE) alternating in one
process (medians of rounds): per workload (forward or training workloads), the forward alone, the forward with the
backward's stored states and (training workloads) the backward alone, off and on; whether y and the stored states are
bit-identical, and the largest difference of each gradient (dB and dC: float atomics, their order moves run to run).

    PYTHONPATH=. python benchmarks/ab_scan_flag.py --flag BC_INPUT_DTYPE [--rounds 5] WORKLOAD ...
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from benchmarks.ab_scan_code import scan_calls
from benchmarks.tune_selective_scan import warm
from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, WORKLOADS
from flashssm.ops.selective_scan import scan


def calls(name: str):
    """`ab_scan_code.scan_calls` of the workload (its backward, which takes the states of the last "forward + states"
    call, only where the workload has dy)."""
    inp = WORKLOADS[name].make_inputs("cuda")
    out, _ = scan_calls(inp, scan)
    if "dy" not in inp:
        del out["backward"]
    return out


def _warm_one(job):
    name, flag, value = job
    try:
        setattr(scan, flag, value)
        for f in calls(name).values():
            f()
        torch.cuda.synchronize()
    except Exception as e:
        return f"{name} {flag}={value}: {type(e).__name__}: {str(e)[:200]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--flag", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    getattr(scan, args.flag)  # (a typo fails here)
    warm([(n, args.flag, v) for n in args.workloads for v in (False, True)], _warm_one, processes=12)
    for name in args.workloads:
        c = calls(name)
        outs = {}
        grads = {}
        for v in (False, True):
            setattr(scan, args.flag, v)
            y, _, ckpt = c["forward + states"]()
            outs[v] = (y, ckpt)
            if "backward" in c:
                grads[v] = c["backward"]()
        same = all(torch.equal(a, b) for a, b in zip(outs[False], outs[True]))
        g_diff = " ".join(f"d{k} {float((a.float() - b.float()).abs().max()):.1e}"
                          for k, a, b in zip(SCAN_TRAIN_INPUTS, grads.get(False, ()), grads.get(True, ()))
                          if a is not None)
        times = {}
        for _ in range(args.rounds):
            for v in (False, True):
                setattr(scan, args.flag, v)
                for k, f in c.items():
                    times.setdefault((k, v), []).append(do_bench(f))
        print(f"\n{name}  {args.flag} off/on: y and stored states {'bit-identical' if same else 'DIFFER'}"
              + (f"; gradients' largest difference {g_diff}" if g_diff else ""))
        for k in c:
            off, on = (statistics.median(times[(k, v)]) for v in (False, True))
            print(f"  {k:18s} off {off:.3f}  on {on:.3f} ms  ({(on / off - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
