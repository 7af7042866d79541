"""A/B of the chain-form backward against an older copy of its module, in one process on one GPU.

    git show REV:flashssm/ops/ssd/backward_chain.py > benchmarks/_old_backward_chain.py
    PYTHONPATH=. python3 -m benchmarks.ab_ssd_backward_chain [OLD_KWARGS_JSON]

(the GPU machine's checkout has no git history: write the old copy here, it travels untracked).
Times both on the 2.7B shape at 8x4K and 1x32K, without and with D, dt_bias and softplus, and prints
the largest relative difference between their gradients. OLD_KWARGS_JSON: extra keyword arguments
for the old ssd_backward (e.g. '{"tf32_grads": true}')."""

import importlib
import json
import sys

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward_chain as new


def main():
    old = importlib.import_module("benchmarks._old_backward_chain")
    old_kw = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    for batch, seqlen in ((8, 4096), (1, 32768)):
        inp = SSDWorkload("probe", batch, seqlen).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        h = x.shape[2]
        g = torch.Generator(device="cuda").manual_seed(1)
        for opts in ({}, dict(D=torch.randn(h, device="cuda", generator=g),
                              dt_bias=torch.rand(h, device="cuda", generator=g) - 4.0, dt_softplus=True)):
            dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256, **opts)
            dy = torch.randn_like(x)

            def run_old():
                return old.ssd_backward(dims, dy, None, x, dt, A, B, C, **opts, **old_kw)

            def run_new():
                return new.ssd_backward(dims, dy, None, x, dt, A, B, C, **opts)
            diff = max(((p.float() - q.float()).norm() / q.float().norm()).item()
                       for p, q in zip(run_old(), run_new()) if p is not None)
            t_old = [do_bench(run_old, warmup=5, rep=40) for _ in range(2)]
            t_new = [do_bench(run_new, warmup=5, rep=40) for _ in range(2)]
            print(f"{batch}x{seqlen} opts={sorted(opts)}: old {t_old} new {t_new} max rel diff {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
