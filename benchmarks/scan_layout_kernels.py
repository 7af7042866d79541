"""Where selective_scan's forward + backward in the Mamba-1 mixer's layout spends its time with outputs in u's layout
against tokens contiguous (scan.OUTPUTS_LIKE_U): every CUDA kernel of one training step, from torch.profiler, for
leaf inputs (autograd then stores each input's gradient) and for inputs made by an op (the gradients flow on, as in
the mixer); and whether y is the same bits in both layouts.

    PYTHONPATH=. python benchmarks/scan_layout_kernels.py [--shape 8x2048] [--check 1x16383]

Why: Nsight Compute timed the backward kernel the same in both layouts (forty-fourth session, call 1) while the whole
step was 0.82x with outputs like u: the difference lies outside the kernel.
"""

import argparse
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

import flashssm
from flashssm.bench.workloads import ScanWorkload
from flashssm.ops.selective_scan import scan


def _inputs(batch, seqlen):
    kw = dict(ScanWorkload("layout", batch, seqlen, mixer_layout=True).make_inputs("cuda"), delta_softplus=True)
    return kw, torch.randn_like(kw["u"])  # (in u's layout, as out_proj's backward gives it)


def _step(kw, dy, leaf):
    """One forward + backward; `leaf`: u, delta, z are leaves; otherwise each is made by a multiply by 1 of a leaf."""
    args = dict(kw)
    for k in ("u", "delta", "z"):
        src = kw[k]
        args[k] = src if leaf else src * 1.0
    flashssm.selective_scan(**args).backward(dy)


def kernels(shape):
    batch, seqlen = map(int, shape.split("x"))
    kw, dy = _inputs(batch, seqlen)
    for k in ("u", "delta", "z"):
        kw[k] = kw[k].detach().requires_grad_()
    for leaf in (True, False):
        for like_u in (True, False):
            scan.OUTPUTS_LIKE_U = like_u
            for _ in range(3):
                _step(kw, dy, leaf)
                for k in ("u", "delta", "z"):
                    kw[k].grad = None
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    _step(kw, dy, leaf)
                    for k in ("u", "delta", "z"):
                        kw[k].grad = None
                torch.cuda.synchronize()
            per = defaultdict(lambda: [0, 0.0])
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    per[e.name][0] += 1
                    per[e.name][1] += e.device_time_total / 1e3
            total = sum(v[1] for v in per.values()) / 5
            print(f"\n{shape} {'leaf' if leaf else 'made by an op'} inputs, outputs "
                  f"{'like u' if like_u else 'tokens contiguous'}: kernels {total:.3f} ms a step", flush=True)
            for name, (n, ms) in sorted(per.items(), key=lambda kv: -kv[1][1]):
                print(f"  {ms / 5:8.3f} ms  x{n // 5:<3d} {name[:110]}")
    scan.OUTPUTS_LIKE_U = True


def check(shape):
    batch, seqlen = map(int, shape.split("x"))
    kw, _ = _inputs(batch, seqlen)
    ys = {}
    for like_u in (True, False):
        scan.OUTPUTS_LIKE_U = like_u
        ys[like_u] = flashssm.selective_scan(**kw)
    scan.OUTPUTS_LIKE_U = True
    diff = (ys[True].float() - ys[False].float()).abs().max().item()
    print(f"{shape} y, outputs like u against tokens contiguous: equal {torch.equal(ys[True], ys[False])}, "
          f"largest difference {diff:.3g}, strides {ys[True].stride()} / {ys[False].stride()}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", help="BATCHxSEQLEN to list kernels at (default 8x2048)")
    ap.add_argument("--check", action="append", help="BATCHxSEQLEN to compare y at (default 1x16383, 8x2047)")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    for shape in args.check or ["1x16383", "8x2047"]:
        check(shape)
    for shape in args.shape or ["8x2048"]:
        kernels(shape)


if __name__ == "__main__":
    main()
