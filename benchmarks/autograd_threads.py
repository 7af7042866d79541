"""A training call's time with autograd's backward on its CUDA device thread (PyTorch's default) and on the calling
thread (`torch.autograd.set_multithreading_enabled(False)`), for flashssm and its peers, alternating in one process.

    PYTHONPATH=. python3 benchmarks/autograd_threads.py [-w train-2.7b-1x2K] [-i flashssm -i mamba_ssm] [--rounds 5]

The bench's own call (`flashssm.bench.impls`: the forward, then torch.autograd.grad of y), timed as `flashssm bench`
times it (do_bench, L2 flushed), medians over rounds. A host-bound call pays for the hand-over to the device thread
and back, and for the two threads' cores taking turns at the same Python objects.
"""

import argparse
import statistics

import torch

from flashssm.bench.impls import IMPLS, Unavailable
from flashssm.bench.measure import time_ms
from flashssm.bench.workloads import WORKLOADS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-w", "--workload", action="append")
    ap.add_argument("-i", "--impl", action="append")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    device = torch.device("cuda")
    for name in args.workload or ["train-2.7b-1x2K"]:
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        for impl in args.impl or ["flashssm", "mamba_ssm"]:
            try:
                fn = IMPLS[w.op][impl].setup(w, inp)
            except Unavailable as why:
                print(f"{name} {impl}: unavailable ({why})")
                continue
            fn()

            def calling_thread():
                with torch.autograd.set_multithreading_enabled(False):
                    return fn()

            times = {"device thread": [], "calling thread": []}
            for _ in range(args.rounds):
                times["device thread"].append(time_ms(fn, device))
                times["calling thread"].append(time_ms(calling_thread, device))
            a, b = (statistics.median(v) for v in times.values())
            print(f"{name} {impl}: device thread {a:.3f} ms, calling thread {b:.3f} ms ({(b / a - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
