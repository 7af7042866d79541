"""Host time of ssd_scan's layers with every kernel launch stubbed out: the direct launcher call, the
torch.library custom op (no autograd), and ssd_scan with inputs that require grad (the op under
autograd), forward and backward. Tells torch's custom-op overhead from flashssm's own.

    PYTHONPATH=. python3 benchmarks/host_custom_op.py [--device cuda]
"""

import argparse
import math
import time

import torch

import flashssm
from flashssm import _runtime
from flashssm.bench.workloads import WORKLOADS


def per_call_us(fn, n=300):
    for _ in range(20):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t) / n * 1e6
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    _runtime.launch = lambda *a, **k: None  # every kernel stubbed: host work only
    from flashssm.ops.checks import check_ssd_scan
    from flashssm.ops.ssd.autograd import ssd_scan_bwd, ssd_scan_fwd
    from flashssm.ops.ssd.forward import launch

    inp = WORKLOADS["2.7b-1x2K"].make_inputs(args.device)
    x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
    dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256)
    dy = torch.randn_like(x)
    rows = {
        "validation (check_ssd_scan)": lambda: check_ssd_scan(x, dt, A, B, C, chunk_size=256),
        "forward.launch (no op)": lambda: launch(dims, x, dt, A, B, C),
        "ssd_scan, no grad": lambda: flashssm.ssd_scan(x, dt, A, B, C, chunk_size=256),
        "custom op ssd_scan_fwd": lambda: ssd_scan_fwd(x, dt, A, B, C, None, None, None, None, None, 256, False, 0.0,
                                                       math.inf, False, "float32", False),
        "custom op ssd_scan_bwd": lambda: ssd_scan_bwd(dy, None, x, dt, A, B, C, None, None, None, None, None, None, 256,
                                                       False, 0.0, math.inf, "float32", False, [True] * 5 + [False] * 4),
    }
    from flashssm.ops.ssd.backward import ssd_backward
    rows["backward, no op"] = lambda: ssd_backward(dims, dy, None, x, dt, A, B, C)
    leaves = [t.detach().clone().requires_grad_() for t in (x, dt, A, B, C)]
    rows["ssd_scan forward, grad"] = lambda: flashssm.ssd_scan(*leaves, chunk_size=256)

    def train():
        y = flashssm.ssd_scan(*leaves, chunk_size=256)
        return torch.autograd.grad(y, leaves, dy)
    rows["forward + autograd.grad"] = train
    for name, fn in rows.items():
        print(f"{name:<32} {per_call_us(fn):8.1f} us", flush=True)


if __name__ == "__main__":
    main()
