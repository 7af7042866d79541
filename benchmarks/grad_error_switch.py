"""Gradient errors of ssd_scan against the float64 reference for each value of a module switch of the SSD kernels,
on the same inputs: does a form that moves the backward's work round differently?

    PYTHONPATH=. python3 benchmarks/grad_error_switch.py MODULE.NAME --value V [--value W ...] [--shape 1x8192]
        [--options] [--seeds 2]

Shape BATCHxSEQLEN of the 2.7B mixer (80 heads x 64, dstate 128, one group), bf16, chunk 256, a final-state
gradient; --options: D per head, dt_bias, softplus (no z: the forward then stores the states for the backward).
Prints, per seed and value, each gradient's relative error (norm of the difference over the reference's norm)."""

import argparse

import torch

import flashssm
from benchmarks.train_harness import switch
from flashssm.ops.ssd import reference as ref
from tests.helpers import rel_err, ssd_inputs
from tests.ops.test_ssd_backward import gradients


def main():
    p = argparse.ArgumentParser()
    p.add_argument("switch")
    p.add_argument("--value", action="append", required=True)
    p.add_argument("--shape", default="1x8192")
    p.add_argument("--options", action="store_true")
    p.add_argument("--seeds", type=int, default=2)
    a = p.parse_args()
    module, attr, values, _ = switch(a.switch, a.value)
    original = getattr(module, attr)  # (an absent switch fails here, as before)
    batch, seqlen = (int(v) for v in a.shape.split("x"))
    extra = dict(D="h", dt_bias=True, dt_softplus=True) if a.options else {}
    try:
        for seed in range(a.seeds):
            torch.manual_seed(seed)
            kw = ssd_inputs(batch, seqlen, 80, 64, 128, 1, dtype=torch.bfloat16, device="cuda", **extra)
            dy = torch.randn_like(kw["x"], dtype=torch.float32)
            dfinal = torch.randn(batch, 80, 64, 128, device="cuda")
            kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
            want = gradients(ref.ssd_scan_chunked, kw64, dy.double(), dfinal.double(), chunk_size=256)[2]
            for text, value in zip(a.value, values):
                setattr(module, attr, value)
                got = gradients(flashssm.ssd_scan, kw, dy, dfinal, chunk_size=256)[2]
                errs = " ".join(f"d{k} {rel_err(got[k], want[k]):.3e}" for k in want)
                print(f"seed {seed} {attr}={text}: {errs}", flush=True)
            del want
    finally:
        setattr(module, attr, original)


if __name__ == "__main__":
    main()
