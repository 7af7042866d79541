"""A/B of the forward's C.B^T preparation launch (`LaunchConfig.pre_cb`, `forward.PRE_CB`): each sub-chunk's C.B^T
written once per group by a small launch and loaded by the output sweep, against the product in the sweep for every
head. Alternating, several rounds, bf16, fp32 states. Per workload (2.7B mixer shape, ngroups from --groups), the
median of each form for:
- forward: the configuration picked for the shape, pre_cb forced on and off;
- train: forward + backward of a training call (x, dt, A, B, C), forward.PRE_CB switched (up to --train-max tokens);
the preparation launch alone, and the largest difference in y between the forms relative to y's largest value.

    (with pre-cb.diff applied) PYTHONPATH=. python benchmarks/results/h100-2026-11-25-twentyseventh/ab_pre_cb.py [ROUNDS] [--workloads 1x2048,8x4096,...] [--groups 1,8]
"""

import argparse
import dataclasses
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
    ap.add_argument("--workloads", default="1x2048,1x8192,1x32768,1x131072,8x4096,32x2048")
    ap.add_argument("--groups", default="1")
    ap.add_argument("--train-max", type=int, default=32768, help="time the training call up to this many tokens")
    a = ap.parse_args()
    for groups in (int(g) for g in a.groups.split(",")):
        for spec in a.workloads.split(","):
            batch, seqlen = (int(v) for v in spec.split("x"))
            inp = SSDWorkload(spec, batch, seqlen, ngroups=groups).make_inputs("cuda")
            x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
            dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256)
            base = forward.pick_config(dims, x.dtype, x.device)
            cfgs = {form: dataclasses.replace(base, pre_cb=form) for form in (True, False)}
            chunk = dims.chunk_size * base.group
            n_rows = forward._chunk_rows(dims, chunk)
            leaves = [t.detach().clone().requires_grad_() for t in (x, dt, A, B, C)]
            dy = torch.randn_like(x)
            state = {"form": True}

            def fwd():
                return forward.launch(dims, x, dt, A, B, C, config=cfgs[state["form"]])[0]

            def train():
                y = flashssm.ssd_scan(*leaves, chunk_size=256)
                return torch.autograd.grad(y, leaves, dy)

            cases = [("forward", fwd)] + ([("train", train)] if batch * seqlen <= a.train_max else [])
            times = {(c, f): [] for c, _ in cases for f in (True, False)}
            ys = {}
            try:
                for _ in range(a.rounds):
                    for form in (True, False):
                        state["form"] = form
                        forward.PRE_CB = form
                        ys[form] = fwd()
                        for name, fn in cases:
                            times[(name, form)].append(do_bench(fn, warmup=25, rep=200))
            finally:
                forward.PRE_CB = True
            t_prep = do_bench(lambda: forward._cb(dims, base.sub, chunk, n_rows, x, B, C, "tf32"), warmup=25, rep=200)
            diff = ((ys[True].float() - ys[False].float()).abs().max() / ys[False].float().abs().max()).item()
            med = {key: statistics.median(v) for key, v in times.items()}
            line = " ".join(f"{n} {med[(n, True)]:.4f}/{med[(n, False)]:.4f} "
                            f"({med[(n, True)] / med[(n, False)] - 1:+.1%})" for n, _ in cases)
            print(f"{spec} g{groups} {'early' if base.early_publish else 'late'} group {base.group} "
                  f"(ms, pre/in-sweep): {line} | prep alone {t_prep:.4f} | y max diff {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
