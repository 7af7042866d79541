"""The Mamba-1 mixer (2.8B shape: d_model 2560, d_inner 5120, dstate 16; bf16) end to end, with selective_scan's
outputs in u's layout (scan.OUTPUTS_LIKE_U, the mixer's channels-contiguous views) against always tokens contiguous
(the previous form), alternating in one process: forward (prefill) and forward + backward, ms.

    PYTHONPATH=. python benchmarks/mixer1_layout.py [--shape 8x2048 --shape 8x2047 ...] [--rounds 3]

What it answers: whether y stored a vector across channels a token (no split stores at lengths that are no multiple
of 8; out_proj reads it without a transpose) and du, ddelta, dz likewise (the projections' and conv's backward read
them as they want them) win over the whole mixer, not only the scan (benchmarks/odd_length_scan.py --outputs).
"""

import argparse

import torch
from triton.testing import do_bench

from flashssm.modules.mamba1 import MambaMixer
from flashssm.ops.selective_scan import scan


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", help="BATCHxSEQLEN (default 8x2048, 8x2047, 1x16384, 1x16383)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forward-only", action="store_true")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    torch.manual_seed(0)
    mixer = MambaMixer(2560, d_state=16, layer_idx=0, device="cuda", dtype=torch.bfloat16)
    for shape in args.shape or ["8x2048", "8x2047", "1x16384", "1x16383"]:
        batch, seqlen = map(int, shape.split("x"))
        hidden = torch.randn(batch, seqlen, 2560, device="cuda", dtype=torch.bfloat16)
        grad = torch.randn_like(hidden)
        leaf = hidden.clone().requires_grad_()

        def forward():
            with torch.no_grad():
                return mixer(hidden)

        def train():
            mixer(leaf).backward(grad)

        cases = {"forward": forward} if args.forward_only else {"forward": forward, "fwd+bwd": train}
        for name, f in cases.items():
            times = {v: [] for v in (True, False)}
            outs = {}
            for _ in range(args.rounds):
                for v in times:
                    scan.OUTPUTS_LIKE_U = v
                    out = f()
                    if out is not None:
                        outs[v] = out
                    times[v].append(do_bench(f, warmup=5, rep=100))
            ms = {v: sorted(t)[len(t) // 2] for v, t in times.items()}
            same = "" if not outs else f", same output: {torch.equal(outs[True], outs[False])}"
            print(f"{shape} {name}: outputs like u {ms[True]:.3f} ms, tokens contiguous {ms[False]:.3f} ms "
                  f"({ms[True] / ms[False]:.3f}x){same}", flush=True)
            mixer.zero_grad(set_to_none=True)
            leaf.grad = None
    scan.OUTPUTS_LIKE_U = True


if __name__ == "__main__":
    main()
