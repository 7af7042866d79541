"""A/B of one of the selective scan's module switches (a boolean in `scan`, e.g. BC_INPUT_DTYPE) alternating in one
process (medians of rounds): per workload (forward or training workloads), the forward alone, the forward with the
backward's stored states and (training workloads) the backward alone, off and on; whether y and the stored states are
bit-identical, and the largest difference of each gradient (dB and dC: float atomics, their order moves run to run).

    PYTHONPATH=. python benchmarks/ab_scan_flag.py --flag BC_INPUT_DTYPE [--rounds 5] WORKLOAD ...
    PYTHONPATH=. python benchmarks/ab_scan_flag.py --flag POLY_EVERY --value '{}' --value '{1: (6, 10)}' WORKLOAD ...

--value (repeated): the flag's values as Python literals (default False, True); each is compared with the first.
"""

import argparse
import ast
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
    out, _ = scan_calls(WORKLOADS[name].make_inputs("cuda"), scan)
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
    ap.add_argument("--value", action="append", dest="values")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    getattr(scan, args.flag)  # (a typo fails here)
    values = [ast.literal_eval(v) for v in args.values or ["False", "True"]]
    warm([(n, args.flag, v) for n in args.workloads for v in values], _warm_one, processes=12)
    for name in args.workloads:
        c = calls(name)
        outs = []
        grads = []
        for v in values:
            setattr(scan, args.flag, v)
            y, _, ckpt = c["forward + states"]()
            outs.append((y, ckpt))
            if "backward" in c:
                grads.append(c["backward"]())
        times = {}
        for _ in range(args.rounds):
            for i, v in enumerate(values):
                setattr(scan, args.flag, v)
                for k, f in c.items():
                    times.setdefault((k, i), []).append(do_bench(f))
        print(f"\n{name}  {args.flag}: " + " / ".join(repr(v) for v in values))
        for i in range(1, len(values)):
            same = all(torch.equal(a, b) for a, b in zip(outs[0], outs[i]))
            y0, y1 = outs[0][0].float(), outs[i][0].float()
            y_diff = float((y1 - y0).abs().max() / y0.abs().max())
            g_diff = " ".join(f"d{k} {float((a.float() - b.float()).abs().max()):.1e}"
                              for k, a, b in zip(SCAN_TRAIN_INPUTS, grads[0] if grads else (),
                                                 grads[i] if grads else ()) if a is not None)
            print(f"  {values[i]!r} against {values[0]!r}: y and stored states "
                  f"{'bit-identical' if same else f'differ (y by {y_diff:.1e} of its largest)'}"
                  + (f"; gradients' largest difference {g_diff}" if g_diff else ""))
        for k in c:
            med = [statistics.median(times[(k, i)]) for i in range(len(values))]
            print(f"  {k:18s} " + "  ".join(f"{m:.3f}" + (f" ({(m / med[0] - 1) * 100:+.1f} %)" if i else "")
                                           for i, m in enumerate(med)) + " ms")


if __name__ == "__main__":
    main()
