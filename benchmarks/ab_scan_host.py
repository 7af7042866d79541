"""A/B of the host path of small calls of a model's prefill (a short prompt): prepared calls off and on, alternated in
one process.

    PYTHONPATH=. python3 benchmarks/ab_scan_host.py [--op scan|scan-train|conv1d|norm ...] [--seqlen 256 ...]
        [--dim 5120] [--rounds 5] [--calls 300]

Batch 1, bf16, no gradients, each op's call as the mixers make it:
- scan: the 2.8B Mamba-1 mixer's selective_scan (u, delta and z channels contiguous, D, delta_bias, softplus, shared
  B and C of dstate 16; `--dim 1536` the 130M mixer's);
- scan-train: the same call with gradients of every input, forward and backward (torch.autograd.grad on one dy; the
  outputs compared are du's);
- conv1d: the 2.7B Mamba-2 mixer's causal_conv1d over xBC (5376 channels, channels contiguous, width 4, bias, SiLU);
- norm: its rmsnorm_gated (5120 channels, z gate, one group, eps 1e-5).
Per op and seqlen, medians over rounds of host (us a call enqueued back to back without synchronising) and bench
(do_bench, us). The outputs of both settings are compared bit for bit.
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

import flashssm
from benchmarks.ab_host_path import host_us
from flashssm import _runtime


def channels_last(t):
    return t.transpose(1, 2).contiguous().transpose(1, 2)


def call(op: str, seqlen: int, dim: int = 5120):
    """fn() making the op's call on new inputs of that length."""
    f = dict(device="cuda", dtype=torch.bfloat16)
    if op == "conv1d":
        kw = dict(x=channels_last(torch.randn(1, 5376, seqlen, **f)), weight=torch.randn(5376, 4, **f),
                  bias=torch.randn(5376, **f), activation="silu")
        return lambda: flashssm.causal_conv1d(**kw)
    if op == "norm":
        kw = dict(x=torch.randn(1, seqlen, 5120, **f), weight=torch.randn(5120, **f),
                  z=torch.randn(1, seqlen, 5120, **f), eps=1e-5, group_size=5120)
        return lambda: flashssm.rmsnorm_gated(**kw)
    kw = scan_inputs(seqlen, dim)
    if op == "scan-train":
        for k, v in kw.items():
            if isinstance(v, torch.Tensor):
                v.requires_grad_()
        wrt = [v for v in kw.values() if isinstance(v, torch.Tensor)]
        dy = torch.randn_like(kw["u"])
        return lambda: torch.autograd.grad(flashssm.selective_scan(**kw), wrt, dy)[0]
    return lambda: flashssm.selective_scan(**kw)


def scan_inputs(seqlen: int, dim: int = 5120, dstate: int = 16):
    f = dict(device="cuda", dtype=torch.bfloat16)
    return dict(u=channels_last(torch.randn(1, dim, seqlen, **f)),
                delta=channels_last(torch.randn(1, dim, seqlen, **f) - 3.0),
                A=-torch.exp(torch.rand(dim, dstate, device="cuda")),
                B=torch.randn(1, dstate, seqlen, **f), C=torch.randn(1, dstate, seqlen, **f),
                D=torch.randn(dim, device="cuda"), z=channels_last(torch.randn(1, dim, seqlen, **f)),
                delta_bias=torch.randn(dim, device="cuda") * 0.5, delta_softplus=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", action="append", choices=["scan", "scan-train", "conv1d", "norm"])
    ap.add_argument("--dim", type=int, default=5120, help="the scan's channels (5120: 2.8B; 1536: 130M)")
    ap.add_argument("--seqlen", type=int, action="append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    a = ap.parse_args()
    original = _runtime.PREPARED
    try:
        for op, seqlen in [(op, seqlen) for op in a.op or ["scan"] for seqlen in a.seqlen or [128, 1024]]:
            fn = call(op, seqlen, a.dim)
            outs = {}
            for setting in (False, True):
                _runtime.PREPARED = setting
                for _ in range(20):
                    outs[setting] = fn()
            same = torch.equal(outs[False], outs[True])
            host = {s: [] for s in (False, True)}
            bench = {s: [] for s in (False, True)}
            for _ in range(a.rounds):
                for setting in (False, True):
                    _runtime.PREPARED = setting
                    host[setting].append(host_us(fn, a.calls))
                    bench[setting].append(do_bench(fn, warmup=25, rep=200) * 1e3)
            width = "" if op in ("conv1d", "norm") else f", dim {a.dim}"
            print(f"{op} 1x{seqlen} (bf16{width}), medians of {a.rounds}; outputs "
                  f"{'the same bits' if same else 'DIFFER'}")
            for setting in (False, True):
                h, b = statistics.median(host[setting]), statistics.median(bench[setting])
                h0, b0 = statistics.median(host[False]), statistics.median(bench[False])
                print(f"  prepared {str(setting):<5} host {h:7.1f} us ({h / h0 - 1:+6.1%})   bench {b:7.1f} us "
                      f"({b / b0 - 1:+6.1%})", flush=True)
    finally:
        _runtime.PREPARED = original


if __name__ == "__main__":
    main()
