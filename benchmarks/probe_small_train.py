"""Small training calls of ssd_scan (2.7B mixer shape, bf16, no options): where their GPU time goes, and what the
backward's own chunk length and form change. Per variant: do_bench's median of a training call (forward +
autograd.grad, as `flashssm bench` times it), the GPU time of its kernels summed (torch profiler), the kernels
above 2 us, and the largest norm-relative difference of the five gradients against the default variant's.

Variants: default; bwd128 / bwd64 (the backward run on chunks of 128 / 64 tokens: its programs are twice / four
times as many and sweep half / a quarter as far; the result does not depend on the chunking beyond rounding);
tiles (the tiles backward forced); tiles128; all128 (ssd_scan called with chunk_size=128: the forward too). First,
the forward alone at chunks of 256, 128 and 64.

    PYTHONPATH=. python benchmarks/probe_small_train.py [--shapes 1x2048,1x4096,2x2048] [--variants ...]
"""

import argparse
import dataclasses

import torch
from triton.testing import do_bench

import flashssm
from benchmarks.train_harness import train_leaves
from benchmarks.tune_ssd_backward import kernel_times
from flashssm.ops.ssd import backward, backward_chain

VARIANTS = ("default", "bwd128", "bwd64", "tiles", "tiles128", "all128")


def _patched(variant):
    """Set the module knobs of a variant; returns the function that puts them back."""
    real_bwd, real_tiles = backward.ssd_backward, backward_chain.use_tiles
    chunk = {"bwd128": 128, "bwd64": 64, "tiles128": 128}.get(variant)
    if chunk is not None:
        def bwd(dims, *args, **kw):
            return real_bwd(dataclasses.replace(dims, chunk_size=min(chunk, dims.chunk_size)), *args, **kw)
        backward.ssd_backward = bwd
    if variant.startswith("tiles"):
        backward_chain.use_tiles = lambda dims, device, *_: True

    def restore():
        backward.ssd_backward, backward_chain.use_tiles = real_bwd, real_tiles
    return restore


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1x2048,1x4096,2x2048,1x8192")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    a = ap.parse_args()
    for spec in a.shapes.split(","):
        leaves, _, dy = train_leaves(spec, False)
        leaves = list(leaves.values())
        fwd = {q: do_bench(lambda: flashssm.ssd_scan(*[t.detach() for t in leaves], chunk_size=q), warmup=25, rep=200)
               for q in (256, 128, 64)}
        print(f"{spec} forward alone, chunk 256 / 128 / 64: " + " / ".join(f"{v:.4f}" for v in fwd.values()) + " ms",
              flush=True)
        ref = None
        for variant in a.variants.split(","):
            chunk = 128 if variant == "all128" else 256

            def train():
                y = flashssm.ssd_scan(*leaves, chunk_size=chunk)
                return torch.autograd.grad(y, leaves, dy)

            restore = _patched(variant)
            try:
                grads = train()
                ms = do_bench(train, warmup=25, rep=300, return_mode="median")
                times, total = kernel_times(train, calls=20)
            finally:
                restore()
            if ref is None:
                ref = grads
            diff = max(((g.float() - r.float()).norm() / r.float().norm()).item() for g, r in zip(grads, ref))
            top = sorted(((t, k) for k, t in times.items() if t > 0.002), reverse=True)
            print(f"{spec} {variant:9s} call {ms:.4f} ms, kernels {total:.4f} ms, grad diff {diff:.1e} | "
                  + ", ".join(f"{k[:22]} {t:.4f}" for t, k in top), flush=True)
        del leaves, dy
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
