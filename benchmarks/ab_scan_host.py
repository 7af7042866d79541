"""A/B of the host path of small selective_scan calls (Mamba-1 prefill of a short prompt): prepared calls off and on,
alternated in one process.

    PYTHONPATH=. python3 benchmarks/ab_scan_host.py [--seqlen 256 ...] [--rounds 5] [--calls 300]

The 2.8B mixer's call, as `MambaMixer` makes it: u, delta and z channels contiguous (stride 1 along dim), bf16,
D, delta_bias and softplus, B and C (batch 1, dstate 16, seqlen) shared, no gradients. Per seqlen, medians over rounds
of host (us a call enqueued back to back without synchronising) and bench (do_bench, us). The outputs of both settings
are compared bit for bit.
"""

import argparse
import statistics
import time

import torch
from triton.testing import do_bench

import flashssm
from flashssm import _runtime


def inputs(seqlen: int, dim: int = 5120, dstate: int = 16):
    def channels_last(t):
        return t.transpose(1, 2).contiguous().transpose(1, 2)

    f = dict(device="cuda", dtype=torch.bfloat16)
    return dict(u=channels_last(torch.randn(1, dim, seqlen, **f)),
                delta=channels_last(torch.randn(1, dim, seqlen, **f) - 3.0),
                A=-torch.exp(torch.rand(dim, dstate, device="cuda")),
                B=torch.randn(1, dstate, seqlen, **f), C=torch.randn(1, dstate, seqlen, **f),
                D=torch.randn(dim, device="cuda"), z=channels_last(torch.randn(1, dim, seqlen, **f)),
                delta_bias=torch.randn(dim, device="cuda") * 0.5, delta_softplus=True)


def host_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - t
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqlen", type=int, action="append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    a = ap.parse_args()
    original = _runtime.PREPARED
    try:
        for seqlen in a.seqlen or [128, 1024]:
            kw = inputs(seqlen)

            def fn():
                return flashssm.selective_scan(**kw)

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
            print(f"1x{seqlen} (2.8B mixer call, bf16), medians of {a.rounds}; outputs "
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
