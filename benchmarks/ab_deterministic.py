"""The deterministic mode's two forms, alternating in one process: the chain form's tiles with their sums in slots
(backward.DETERMINISTIC_TILES) and the chunk-parallel form, each also with torch's NaN fill of the kernels' buffers
(-filled: _runtime.UNFILLED_BUFFERS off, as before the nineteenth session); with the default (atomic) form for
reference. Per workload (2.7B mixer shape, bf16, as `flashssm bench`'s train workloads): do_bench's median of a
training call (forward + autograd.grad of x, dt, A, B, C, and with --options of D, z, dt_bias too) under
torch.use_deterministic_algorithms(True), the call's peak memory above its inputs, and whether two calls give the same
bits.

    PYTHONPATH=. python benchmarks/ab_deterministic.py [--workloads 1x2048,8x4096,1x32768] [--rounds 3] [--options]
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

import flashssm
from flashssm import _runtime
from flashssm.bench.run import peak_extra_mb
from flashssm.ops.ssd import backward
from benchmarks.train_harness import train_leaves


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="1x2048,8x4096,1x32768")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--options", action="store_true")
    a = ap.parse_args()
    for spec in a.workloads.split(","):
        leaves, kw, dy = train_leaves(spec, a.options)

        def train():
            y = flashssm.ssd_scan(**leaves, **kw)
            return torch.autograd.grad(y, list(leaves.values()), dy)

        times = {"tiles-det": [], "tiles-det-filled": [], "parallel-det": [], "parallel-det-filled": [], "atomic": []}
        peaks, same = {}, {}
        for _ in range(a.rounds):
            for form in times:
                backward.DETERMINISTIC_TILES = form.startswith("tiles-det")
                _runtime.UNFILLED_BUFFERS = not form.endswith("-filled")
                torch.use_deterministic_algorithms(form != "atomic")
                try:
                    first = train()
                    again = train()
                    same[form] = all(torch.equal(u, v) for u, v in zip(first, again))
                    del first, again
                    peaks[form] = peak_extra_mb(train, torch.device("cuda"))
                    times[form].append(do_bench(train, warmup=5, rep=40))
                finally:
                    torch.use_deterministic_algorithms(False)
        backward.DETERMINISTIC_TILES, _runtime.UNFILLED_BUFFERS = True, True
        for form, t in times.items():
            print(f"{spec}{' options' if a.options else ''} {form:19s}: {statistics.median(t):.3f} ms "
                  f"(rounds {', '.join(f'{v:.3f}' for v in t)}), peak above inputs {peaks[form]:.0f} MiB, "
                  f"repeat identical: {same[form]}", flush=True)


if __name__ == "__main__":
    main()
