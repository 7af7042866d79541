"""A/B of the tiles backward's cs launch (`backward_tiles.PRE_CS`): cs, the chunk cumsum of dt A, written once by
the forward's preparation kernel (`forward._decays`) and loaded by the tiles kernel, against each tiles program
computing it (sum and cumsum in the kernel). Alternating, several rounds, 2.7B mixer shape, bf16: per workload the median time of a training call
(forward + backward of x, dt, A, B, C) in each form, and the largest relative difference between the forms' gradients.

    PYTHONPATH=. python benchmarks/ab_tiles_cs.py [ROUNDS] [--workloads 8x4096,1x32768]
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

import flashssm
from benchmarks.train_harness import train_leaves
from flashssm.ops.ssd import backward_tiles


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--workloads", default="8x4096,1x32768,32x2048")
    a = ap.parse_args()
    for spec in a.workloads.split(","):
        leaves, _, dy = train_leaves(spec, False)
        leaves = list(leaves.values())

        def train():
            y = flashssm.ssd_scan(*leaves, chunk_size=256)
            return torch.autograd.grad(y, leaves, dy)

        times = {form: [] for form in (True, False)}
        grads = {}
        try:
            for _ in range(a.rounds):
                for form in (True, False):
                    backward_tiles.PRE_CS = form
                    grads[form] = train()
                    times[form].append(do_bench(train, warmup=10, rep=200))
        finally:
            backward_tiles.PRE_CS = True
        diffs = [((g1.float() - g0.float()).norm() / g0.float().norm()).item()
                 for g1, g0 in zip(grads[True], grads[False])]
        med = {form: statistics.median(v) for form, v in times.items()}
        print(f"{spec} train (ms, cs launch/in-kernel): {med[True]:.4f}/{med[False]:.4f} "
              f"({med[True] / med[False] - 1:+.1%}) | gradient differences (x, dt, A, B, C) "
              + " ".join(f"{d:.1e}" for d in diffs), flush=True)


if __name__ == "__main__":
    main()
