"""Where a training call's host time goes, by phase: the forward (ssd_scan with leaves that need gradients), the
autograd engine around the backward, the backward's own body (SSDScanFunction.backward), and inside that the replay.

    PYTHONPATH=. python3 benchmarks/host_phases.py [-w train-2.7b-1x2K] [--calls 300]

Medians of per-call wall times on the host (perf_counter), calls back to back without synchronising: at these sizes
the host is the slower side (benchmarks/train_gaps.py), so the GPU never holds it back.
"""

import argparse
import statistics
import time

import torch

import flashssm
from benchmarks.replay_steps import timer
from flashssm import _runtime
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.ssd import autograd as ssd_autograd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-w", "--workload", action="append")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    spans = {}
    backward, replay, run = ssd_autograd.SSDScanFunction.backward, _runtime.replay, _runtime.Prepared.run
    ssd_autograd.SSDScanFunction.backward = staticmethod(timer("backward body", backward, spans))
    _runtime.replay = timer("backward replay", replay, spans)
    _runtime.Prepared.run = timer("Prepared.run", run, spans)  # (the forward's replay, then the backward's, each call)
    try:
        for name in args.workload or ["train-2.7b-1x2K"]:
            w = WORKLOADS[name]
            inp = w.make_inputs("cuda")
            names = ("x", "dt", "A", "B", "C") + getattr(w, "extra_inputs", ())
            leaves = [inp[k].detach().clone().requires_grad_() for k in names]
            opts = w.options(*leaves[5:]) if len(leaves) > 5 else {}
            rows = {"forward": [], "grad": [], "call": []}
            for i in range(args.calls + 20):
                t0 = time.perf_counter()
                y = flashssm.ssd_scan(*leaves[:5], chunk_size=w.chunk_size, **opts)
                t1 = time.perf_counter()
                torch.autograd.grad(y, leaves, inp["dy"])
                t2 = time.perf_counter()
                if i == 19:
                    spans.clear()
                if i >= 20:
                    rows["forward"].append(t1 - t0)
                    rows["grad"].append(t2 - t1)
                    rows["call"].append(t2 - t0)
            torch.cuda.synchronize()
            runs = spans.pop("Prepared.run", [])
            rows.update(spans)
            rows["forward's run"], rows["backward's run"] = runs[0::2], runs[1::2]
            print(f"{name}: host us a call, medians of {args.calls}")
            for k, v in rows.items():
                print(f"  {k:16s} {statistics.median(v) * 1e6:8.1f}")
    finally:
        ssd_autograd.SSDScanFunction.backward = backward
        _runtime.replay, _runtime.Prepared.run = replay, run


if __name__ == "__main__":
    main()
