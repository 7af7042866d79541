"""Where the host time of one training step of ssd_scan goes (forward + autograd.grad, every kernel launch
stubbed out, so only the host work is left): cProfile of N steps, top functions by own time and by cumulative time.

    PYTHONPATH=. python3 benchmarks/host_train_profile.py [--workload 2.7b-1x2K] [--steps 300] [--top 30]
"""

import argparse
import cProfile
import pstats

import torch

import flashssm
from flashssm.bench.workloads import WORKLOADS
from benchmarks.train_harness import launches_stubbed, stubbed_host_us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="2.7b-1x2K")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    inp = WORKLOADS[a.workload].make_inputs("cuda")
    leaves = [inp[k].detach().clone().requires_grad_() for k in ("x", "dt", "A", "B", "C")]
    dy = torch.randn_like(leaves[0])

    def step():
        y = flashssm.ssd_scan(*leaves, chunk_size=256)
        return torch.autograd.grad(y, leaves, dy)

    for _ in range(5):  # compile and cache with the real kernels
        step()
    torch.cuda.synchronize()
    print(f"host time a step, launches stubbed: {stubbed_host_us(step, a.steps):.1f} us", flush=True)
    with launches_stubbed():
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(a.steps):
            step()
        prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(a.top)
    stats.sort_stats("cumulative").print_stats(a.top)


if __name__ == "__main__":
    main()
