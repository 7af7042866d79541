"""A/B of the forward's preparation launch (`LaunchConfig.pre_decays`, `forward.PRE_DECAYS`): dt and its cumsums
written by a small launch and loaded by the sweeps, against the cumsum and sum computed in the sweeps. Alternating,
several rounds, 2.7B mixer shape, bf16, fp32 states. Per workload, the median of each form for:
- forward: the configuration picked for the shape, pre_decays forced on and off (both publish modes);
- prep: the preparation launch alone;
- states: the backward's state recompute (`entering_states`, early or late as picked, pre_decays switched);
- train: forward + backward of a training call (x, dt, A, B, C), forward.PRE_DECAYS switched;
and the largest difference in y between the forms relative to y's largest value.

    PYTHONPATH=. python benchmarks/ab_pre_decays.py [ROUNDS] [--workloads 1x2048,8x4096,...] [--train-max N]
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
    ap.add_argument("--train-max", type=int, default=32768, help="time the training call up to this many tokens")
    ap.add_argument("--no-states", action="store_true")
    a = ap.parse_args()
    for spec in a.workloads.split(","):
        batch, seqlen = (int(v) for v in spec.split("x"))
        inp = SSDWorkload(spec, batch, seqlen).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256)
        base = forward.pick_config(dims, x.dtype, x.device)
        cfgs = {form: dataclasses.replace(base, pre_decays=form) for form in (True, False)}
        chunk = dims.chunk_size * base.group
        n_rows = forward._chunk_rows(dims, chunk)
        leaves = [t.detach().clone().requires_grad_() for t in (x, dt, A, B, C)]
        dy = torch.randn_like(x)

        def fwd():
            return forward.launch(dims, x, dt, A, B, C, config=cfgs[forward.PRE_DECAYS])[0]

        def states():
            return forward.entering_states(dims, x, dt, A, B, pre_decays=forward.PRE_DECAYS)

        def train():
            y = flashssm.ssd_scan(*leaves, chunk_size=256)
            return torch.autograd.grad(y, leaves, dy)

        cases = [("forward", fwd)] + ([] if a.no_states else [("states", states)])
        cases += [("train", train)] if batch * seqlen <= a.train_max else []
        times = {(c, f): [] for c, _ in cases for f in (True, False)}
        ys = {}
        try:
            for _ in range(a.rounds):
                for form in (True, False):
                    forward.PRE_DECAYS = form
                    ys[form] = fwd()
                    for name, fn in cases:
                        times[(name, form)].append(do_bench(fn, warmup=25, rep=200))
        finally:
            forward.PRE_DECAYS = True
        t_prep = do_bench(lambda: forward._decays(dims, base.sub, chunk, n_rows, x, dt, A, None, False),
                          warmup=25, rep=200)
        diff = ((ys[True].float() - ys[False].float()).abs().max() / ys[False].float().abs().max()).item()
        med = {key: statistics.median(v) for key, v in times.items()}
        line = " ".join(f"{n} {med[(n, True)]:.4f}/{med[(n, False)]:.4f} ({med[(n, True)] / med[(n, False)] - 1:+.1%})"
                        for n, _ in cases)
        print(f"{spec} {'early' if base.early_publish else 'late'} group {base.group} (ms, prep/in-sweep): {line} | "
              f"prep alone {t_prep:.4f} | y max diff {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
