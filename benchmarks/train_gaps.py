"""Where a training call's GPU time goes between its kernels: back-to-back calls of a bench workload under the torch
profiler, then for the middle call the kernels in order with their durations and the idle gap before each.

    PYTHONPATH=. python3 benchmarks/train_gaps.py train-2.7b-1x2K [--calls 12]

(Every call must launch the same kernels: a call's are the i-th run of them in GPU order.) A call whose kernels add
to much less than the span from its first kernel's start to its last one's end waits on the
host in between (or on a synchronisation); the gaps say where in the call.
"""

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from flashssm.bench.impls import IMPLS
from flashssm.bench.workloads import WORKLOADS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--calls", type=int, default=12)
    ap.add_argument("--impl", default="flashssm")
    args = ap.parse_args()
    w = WORKLOADS[args.workload]
    torch.manual_seed(0)
    inp = w.make_inputs("cuda")
    fn = IMPLS[w.op][args.impl].setup(w, inp)
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:  # (the GPU's activity alone: less host overhead)
        for _ in range(args.calls):
            fn()
        torch.cuda.synchronize()
    events = prof.events()
    kernels = sorted([e for e in events if e.device_type == torch.autograd.DeviceType.CUDA],
                     key=lambda e: e.time_range.start)
    # every call launches the same kernels in the same order, and the GPU runs them in that order: call i's are the
    # i-th run of len(kernels) / calls of them (the profile starts on an idle GPU)
    per_call, left = divmod(len(kernels), args.calls)
    if left or not per_call:
        raise SystemExit(f"{len(kernels)} kernels for {args.calls} calls: not the same launches each call")
    mid = args.calls // 2
    mine = kernels[mid * per_call:(mid + 1) * per_call]
    lo, hi = mine[0].time_range.start, kernels[(mid + 1) * per_call].time_range.start
    busy = sum(k.time_range.end - k.time_range.start for k in mine)
    span = mine[-1].time_range.end - mine[0].time_range.start
    print(f"{args.workload} ({args.impl}): call {mid}: {len(mine)} kernels, {busy:.1f} us busy, first-to-last "
          f"{span:.1f} us, the next call's first kernel {hi - lo:.1f} us after its first")
    prev = None
    for k in mine:
        gap = 0.0 if prev is None else k.time_range.start - prev
        print(f"  gap {gap:8.1f}  run {k.time_range.end - k.time_range.start:8.1f}  {k.name[:90]}")
        prev = k.time_range.end


if __name__ == "__main__":
    main()
