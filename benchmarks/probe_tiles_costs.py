"""Where the tiles backward's time goes: the GPU time of each of its kernels (torch profiler) with some gradients
not asked for, so that each kernel's parts can be told apart (2.7B shape, bf16, no options).

    python benchmarks/probe_tiles_costs.py [--shapes 8x4096,1x32768]

Variants (needs: x, dt, A, B, C): all; no B/C (the tiles kernel without dB's state part and the state parts'
atomics, the pair launch without V and its two products); dx only (bracket and dx: no decay gradient, no dB/dC,
no pair launch); decay only (dt, A: the pair sums without V); no x (all but the dx store).
--deterministic runs each variant asked for in both modes (the atomic default, then the slots), every kernel listed
(the slots' zero-fills and sums included), with the backward's CUDA-event time beside the kernels' sum.
"""

import argparse

import torch

from benchmarks.ab_tiles import inputs
from benchmarks.tune_ssd_backward import kernel_times
from flashssm.ops.ssd import backward

VARIANTS = {
    "all": (True,) * 5,
    "no-bc": (True, True, True, False, False),
    "dx-only": (True, False, False, False, False),
    "decay-only": (False, True, True, False, False),
    "bc-only": (False, False, False, True, True),
    "no-x": (False, True, True, True, True),
}


def event_ms(run, calls=20):
    """Median CUDA-event time of one call of run() over `calls` calls."""
    run()
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8x4096,1x32768")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--deterministic", action="store_true")
    a = ap.parse_args()
    modes = (False, True) if a.deterministic else (False,)
    for shape in a.shapes.split(","):
        batch, seqlen = map(int, shape.split("x"))
        dims, (x, dt, A, B, C), kw, dy = inputs(batch, seqlen, "cuda", "none")
        for name in a.variants.split(","):
            needs = VARIANTS[name]
            for det in modes:
                def run():
                    return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, form="chain", tiles=True,
                                                 needs=list(needs) + [True] * 4, deterministic=det)
                times, total = kernel_times(run, calls=20)
                wall = event_ms(run)
                top = sorted(((t, k) for k, t in times.items() if t > (0.0005 if det else 0.002)), reverse=True)
                print(f"{shape} {name}{' deterministic' if det else ''}: events {wall:.3f} ms, kernels {total:.3f} ms: "
                      + ", ".join(f"{k[:40 if a.deterministic else 24]} {t:.3f}" for t, k in top), flush=True)
        del x, dt, A, B, C, dy
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
