"""A/B of the early publish's own-state sweep: from the chunk's end with asynchronous products (`_own_add`,
forward.OWN_REVERSED True) against from its start with the state decayed every step (False), alternating, several
rounds, on the 2.7B mixer shape (bf16) at batch 1 (where the forward and the backward's state recompute publish
early). Prints per workload the median of each form for the forward, the state recompute alone, and the
forward + backward of a training call, and the forms' largest relative difference in y.

The from-end form was measured and not kept (benchmarks/notes/ssd_forward.md, fifteenth session). Apply its kernel
part first: `git apply --include='flashssm/*' benchmarks/results/h100-2026-11-24-fifteenth/own-state-from-end.diff`
(the patch's test part predates the small-dt test). Without it the script stops: the committed code has no
`OWN_REVERSED`, and both columns would time the same kernel.

    PYTHONPATH=. python benchmarks/ab_own_state.py [ROUNDS] [--seqlens 2048,8192,32768,131072]
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

import flashssm
from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", nargs="?", type=int, default=3)
    ap.add_argument("--seqlens", default="2048,8192,32768,131072")
    ap.add_argument("--train-max", type=int, default=32768, help="time the training call up to this seqlen")
    a = ap.parse_args()
    if not hasattr(forward, "OWN_REVERSED"):
        raise SystemExit("forward.OWN_REVERSED is missing: git apply --include='flashssm/*' "
                         "benchmarks/results/h100-2026-11-24-fifteenth/own-state-from-end.diff")
    for seqlen in (int(s) for s in a.seqlens.split(",")):
        inp = SSDWorkload(f"1x{seqlen}", 1, seqlen).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256)
        leaves = [t.detach().clone().requires_grad_() for t in (x, dt, A, B, C)]
        dy = torch.randn_like(x)

        def fwd():
            return flashssm.ssd_scan(x, dt, A, B, C, chunk_size=256)

        def states():
            return forward.entering_states(dims, x, dt, A, B)

        def train():
            y = flashssm.ssd_scan(*leaves, chunk_size=256)
            return torch.autograd.grad(y, leaves, dy)

        cases = [("forward", fwd), ("states", states)] + ([("train", train)] if seqlen <= a.train_max else [])
        times = {(c, f): [] for c, _ in cases for f in (True, False)}
        ys = {}
        for _ in range(a.rounds):
            for form in (True, False):
                forward.OWN_REVERSED = form
                ys[form] = fwd()
                for name, fn in cases:
                    times[(name, form)].append(do_bench(fn, warmup=25, rep=200))
        forward.OWN_REVERSED = True
        diff = ((ys[True].float() - ys[False].float()).abs().max() / ys[False].float().abs().max()).item()
        med = {key: statistics.median(v) for key, v in times.items()}
        line = " ".join(f"{name} {med[(name, True)]:.4f}/{med[(name, False)]:.4f}" for name, _ in cases)
        print(f"1x{seqlen} (ms, from-end/from-start): {line} | y max diff {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
