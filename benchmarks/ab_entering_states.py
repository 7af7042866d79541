"""Time the backward's state recompute (`entering_states`) per configuration on the GPU: early publish
with one chunk a program (the form used before 2026-11-23's fifth session) against late publish with a
span of chunks a program (one sweep, the states stored on the way);
the 2.7B shape in bf16 with dt_bias and softplus. Each variant's states are compared with the first's.

    PYTHONPATH=. python3 benchmarks/ab_entering_states.py [--workload 2.7b-8x4K ...]
"""

import argparse

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd.forward import entering_states

VARIANTS = {"early, 1 chunk": dict(late_states=False), "early, step 128": dict(late_states=False, sub_a=128),
            "late, auto group": dict(late_states=True), "late, step 128": dict(late_states=True, sub_a=128),
            "late, group 4": dict(late_states=True, group=4), "default": {}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", action="append")
    args = ap.parse_args()
    for name in args.workload or ["2.7b-8x4K", "2.7b-32x2K", "2.7b-1x32K"]:
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        x, dt, A, B = (inp[k] for k in ("x", "dt", "A", "B"))
        h = x.shape[2]
        bias = torch.rand(h, device="cuda") - 4.0
        dims = check_ssd_scan(x, dt, A, B, inp["C"], chunk_size=w.chunk_size, dt_bias=bias, dt_softplus=True)
        first = None
        line = f"{name}:"
        for label, kw in VARIANTS.items():
            def run():
                return entering_states(dims, x, dt, A, B, dt_bias=bias, dt_softplus=True, **kw)
            states = run()
            if first is None:
                first = states
            diff = ((states - first).norm() / first.norm()).item()
            line += f" | {label} {do_bench(run, warmup=10, rep=100):.3f} ms (vs first {diff:.1e})"
        print(line, flush=True)
        del inp, x, dt, A, B, first, states
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
