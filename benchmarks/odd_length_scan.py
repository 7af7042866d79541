"""Mamba-1's forward at a sequence length that is a multiple of 16 against one that is not (the (batch, dim, seqlen)
rows then lose 16-byte alignment and the kernel's vector loads and stores: benchmarks/notes/selective_scan.md,
forty-first session), 2.8B shape, bf16, flashssm alone; ms per token against the aligned length's.

    PYTHONPATH=. python benchmarks/odd_length_scan.py [--batch 8] [--seqlen 2048 --seqlen 2047] [--train]
        [--row-align 8 --row-align 1] [--channels-last] [--outputs like-u --outputs tokens]

--row-align: scan.ROW_ALIGN's values to time each length with, alternating (`row_align`: 1 is the JIT's marks alone).
--channels-last: u, delta and z as the Mamba-1 mixer passes them (transposed (batch, seqlen, dim) tensors), and the
    backward's dy so too (as out_proj's backward gives it).
--outputs: scan.OUTPUTS_LIKE_U's values to time, alternating (like-u: y and the gradients in u's layout; tokens: always
    tokens contiguous, the previous form).
"""

import argparse

import torch
from triton.testing import do_bench

import flashssm
from flashssm.bench.workloads import ScanWorkload
from flashssm.ops.selective_scan import scan


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seqlen", type=int, action="append")
    ap.add_argument("--train", action="store_true", help="forward + backward instead")
    ap.add_argument("--row-align", type=int, action="append")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--outputs", action="append", choices=("like-u", "tokens"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    variants = [(a, o) for a in args.row_align or [scan.ROW_ALIGN]
                for o in args.outputs or ["like-u" if scan.OUTPUTS_LIKE_U else "tokens"]]
    base = None
    for seqlen in args.seqlen or [2048, 2047]:
        kw = dict(ScanWorkload("odd", args.batch, seqlen).make_inputs("cuda"), delta_softplus=True)
        if args.channels_last:
            for k in ("u", "delta", "z"):
                kw[k] = kw[k].transpose(1, 2).contiguous().transpose(1, 2)
        if args.train:
            leaves = {k: v.requires_grad_() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                      for k, v in kw.items()}
            dy = torch.randn_like(kw["u"])
            f = lambda: flashssm.selective_scan(**leaves).backward(dy)  # noqa: E731
        else:
            f = lambda: flashssm.selective_scan(**kw)  # noqa: E731
        times = {v: [] for v in variants}
        for _ in range(args.rounds):
            for v in variants:
                scan.ROW_ALIGN, scan.OUTPUTS_LIKE_U = v[0], v[1] == "like-u"
                f()
                times[v].append(do_bench(f, warmup=10, rep=100))
        for v in variants:
            ms = sorted(times[v])[len(times[v]) // 2]
            per = ms / seqlen
            base = base or per
            print(f"{args.batch}x{seqlen}{' train' if args.train else ''}{' channels-last' if args.channels_last else ''}"
                  f" row_align {v[0]} outputs {v[1]}: {ms:.3f} ms, {per / base:.3f}x the first's time a token",
                  flush=True)


if __name__ == "__main__":
    main()
