"""Time ssd_scan's inference forward and training call on the bench's 2.7B-shape inputs (`train_harness`), medians of
do_bench, in whatever flashssm the import path finds first: for an A/B of two package trees run in turn, e.g.

    PYTHONPATH=OLD_TREE:. python3 benchmarks/time_ssd_calls.py 1x128K 8x4K --train 8x4K 1x32K
    PYTHONPATH=. python3 benchmarks/time_ssd_calls.py 1x128K 8x4K --train 8x4K 1x32K

(run each more than once, alternating: between processes the figures move more than within one). Each line ends with
the sums of the outputs' magnitudes (y; the training call's gradients), to check two trees against each other (the
forward's y is deterministic; the gradients take float atomics in places).
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

import flashssm
from benchmarks.train_harness import add_dtype_argument, forward_call, training_call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("forward", nargs="*", help="workloads of the inference forward, BATCHxSEQLEN (K = 1024 tokens)")
    ap.add_argument("--train", nargs="*", default=[], help="workloads of the training call")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--peak", action="store_true", help="the training call's peak memory above its start, too")
    ap.add_argument("--options", action="store_true", help="with D (a value a head), dt_bias and softplus, as a layer")
    add_dtype_argument(ap)
    a = ap.parse_args()
    print(f"flashssm from {flashssm.__file__}, {a.dtype}" + (", D, dt_bias, softplus" if a.options else ""))
    for kind, specs, make in (("forward", a.forward, lambda s: forward_call(s, a.options, dtype=a.dtype)),
                              ("training", a.train, lambda s: training_call(s, a.options, dtype=a.dtype)[0])):
        for spec in specs:
            f = make(spec)
            out = f()
            torch.cuda.synchronize()
            ms = statistics.median(do_bench(f) for _ in range(a.reps))
            outs = out if isinstance(out, (tuple, list)) else (out,)
            sums = " ".join(f"{float(t.double().abs().sum()):.9e}" for t in outs if t is not None)
            peak = ""
            if a.peak:  # (one more call, its outputs freed first: what it holds above the inputs at its peak)
                del out, outs
                torch.cuda.synchronize()
                start = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                f()
                torch.cuda.synchronize()
                peak = f"  peak +{(torch.cuda.max_memory_allocated() - start) / 2**20:.0f} MiB"
            print(f"{kind:8s} {spec:7s} {ms:.4f} ms{peak}  (sums of |outputs|: {sums})")


if __name__ == "__main__":
    main()
