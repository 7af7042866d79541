"""Small ssd_scan training calls, timed as `flashssm bench` times them, and their host time alone: run it once per
version of the package (PYTHONPATH) and alternate the runs to compare two versions on one machine, or with --states
to alternate, in one process, the backward taking the entering states stored by the forward and recomputing them
(backward_chain.STATES_FROM_FORWARD), ROUNDS times.

Per workload (2.7B mixer shape, bf16): do_bench's median of a training call (forward + autograd.grad of x, dt, A, B,
C, and with --options of D, z, dt_bias too), the host time of one such call with every kernel launch stubbed out
(wall time of N calls, no synchronisation needed), and do_bench's median of the forward alone.

    PYTHONPATH=. python benchmarks/host_small_train.py [--workloads 1x2048,1x4096] [--label new] [--states ROUNDS]
"""

import argparse

import torch
from triton.testing import do_bench

import flashssm
from flashssm.ops.ssd import backward_chain
from benchmarks.train_harness import stubbed_host_us, train_leaves


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="1x2048,1x4096")
    ap.add_argument("--label", default="")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--states", type=int, default=0)
    a = ap.parse_args()
    for spec in a.workloads.split(","):
        for options in (False, True):
            leaves, kw, dy = train_leaves(spec, options)
            plain = {k: v.detach() for k, v in leaves.items()}

            def train():
                y = flashssm.ssd_scan(**leaves, **kw)
                return torch.autograd.grad(y, list(leaves.values()), dy)

            def forward():
                return flashssm.ssd_scan(**plain, **kw)

            forms = [(a.label, None)] if not a.states else [("stored", True), ("recomputed", False)] * a.states
            for label, stored in forms:
                if stored is not None:
                    backward_chain.STATES_FROM_FORWARD = stored
                _measure(train, forward, spec, options, label, a.calls)
            backward_chain.STATES_FROM_FORWARD = True


def _measure(train, forward, spec, options, label, calls):
    """do_bench of the training call and of the forward, then the training call's host time with the launches
    stubbed out."""
    ms = do_bench(train, warmup=25, rep=300, return_mode="median")
    fwd_ms = do_bench(forward, warmup=25, rep=200, return_mode="median")
    torch.cuda.synchronize()
    host_us = stubbed_host_us(train, calls)
    torch.cuda.synchronize()
    print(f"{label} {spec}{' +D,z,dt_bias,softplus' if options else ''}: train {ms:.4f} ms, "
          f"host alone {host_us:.1f} us, forward {fwd_ms:.4f} ms", flush=True)


if __name__ == "__main__":
    main()
