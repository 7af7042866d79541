"""Where a selective_scan training call's time goes: per workload, do_bench's median of the call as `flashssm bench`
times it (forward, then the gradients of all eight inputs), of the forward alone without and with the states the
backward needs, and of the backward launches alone; then the GPU time of every kernel of one training call (torch
profiler) and their sum, so that host time and the small launches show against the two scan kernels.

    PYTHONPATH=. python benchmarks/probe_scan_train.py [m1train-130m-1x8K m1train-n128-1x1K ...]
"""

import argparse

import torch
from triton.testing import do_bench

from benchmarks.tune_ssd_backward import kernel_times
from flashssm.bench.impls import _flashssm_scan_fwd, _train
from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, WORKLOADS
from flashssm.ops.selective_scan import scan

DEFAULT = ("m1train-2.8b-8x2K", "m1train-130m-1x8K", "m1train-n128-1x1K")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name in args.workloads:
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        t = [inp[k] for k in SCAN_TRAIN_INPUTS]
        batch, dim, seqlen = inp["u"].shape
        dstate = inp["A"].shape[1]
        fcfg = scan.forward_config(batch, dim, dstate, 1, n_sms, 2, seqlen)
        bcfg = scan.backward_config(batch, dim, dstate, 1, seqlen, n_sms, 2)
        call = _train(_flashssm_scan_fwd, inputs=SCAN_TRAIN_INPUTS)(w, inp)
        call()
        _, _, ckpt = scan.scan_forward(*t, True, ckpt_tile=bcfg.chunk)
        dy = inp["dy"]

        def fwd():
            return scan.scan_forward(*t, True)

        def fwd_ckpt():
            return scan.scan_forward(*t, True, ckpt_tile=bcfg.chunk)

        def bwd():
            return scan.scan_backward(dy, None, *t, True, ckpt=ckpt, ckpt_tile=bcfg.chunk)

        times = {k: do_bench(f) for k, f in (("training call", call), ("forward", fwd),
                                            ("forward + states", fwd_ckpt), ("backward", bwd))}
        print(f"\n{name} {w.shape}\n  forward {fcfg}\n  backward {bcfg}")
        print("  " + ", ".join(f"{k} {v:.3f} ms" for k, v in times.items()))
        kt, total = kernel_times(call)
        print(f"  kernels of one training call: {total:.3f} ms of GPU time (call {times['training call']:.3f} ms)")
        for k, v in sorted(kt.items(), key=lambda kv: -kv[1]):
            if v >= 0.002:
                print(f"    {v:8.3f} ms  {k[:100]}")


if __name__ == "__main__":
    main()
