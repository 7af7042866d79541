"""Packed sequences (cu_seqlens) against the same tokens as a dense batch, on the GPU.

A user who packs sequences for training gets the packed path of every kernel; the bench's workloads are all dense.
This times, for the same total tokens:

- ssd_scan (2.7B mixer shape, bf16): dense B x L against one packed row of B sequences of L tokens (chunk-aligned),
  and against a ragged packing of B sequences whose lengths are not chunk multiples; forward alone and forward +
  backward (x, dt, A, B, C). mamba_ssm's mamba_chunk_scan_combined in the same run where it imports (seq_idx for
  the packed rows).
- selective_scan (Mamba-1 2.8B shape): the same three layouts, forward and forward + backward (flashssm only:
  mamba_ssm's CUDA scan has no packed form).

It also checks that the chunk-aligned packed forward gives the dense forward's y (the same tokens, the same
sequences), so a packed path that is fast but wrong shows here too.

    PYTHONPATH=. python3 benchmarks/packed_vs_dense.py [--ssd 8x4096] [--scan 8x2048] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics

import torch

import flashssm
from flashssm.bench.impls import _seq_idx
from flashssm.bench.workloads import ScanWorkload, SSDWorkload, ragged_lengths

DEVICE = "cuda"  # a dry run on the CPU under the interpreter sets these three
SSD_SHAPE: dict = {}
SCAN_SHAPE: dict = {}
KERNELS = False  # --kernels: each training call's kernels by the profiler


def _time(fn, rounds: int) -> float:
    """Median ms of `rounds` timings, each the mean of enough back-to-back calls to fill ~50 ms."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    reps = max(3, int(50 / max(start.elapsed_time(end), 1e-3)))
    out = []
    for _ in range(rounds):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / reps)
    return statistics.median(out)


def _peak_mib(fn) -> float:
    """MiB allocated at the peak of one call of fn above what was allocated before it (the bench's measure)."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    del out
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def _print_kernels(train) -> None:
    """Each kernel's GPU ms a training call (the profiler), largest first."""
    from benchmarks.tune_ssd_backward import kernel_times

    times, total = kernel_times(train, calls=5)
    print(f"    kernels {total:.3f} ms: " + ", ".join(f"{k[:28]} {v:.3f}" for k, v in
                                                  sorted(times.items(), key=lambda kv: -kv[1])[:8]))


def _cu(lengths, device):
    cu = [0]
    for v in lengths:
        cu.append(cu[-1] + v)
    return torch.tensor(cu, dtype=torch.int32, device=device)


def ssd_rows(batch: int, seqlen: int, rounds: int) -> None:
    w = SSDWorkload("packed", batch, seqlen, **SSD_SHAPE)
    inp = w.make_inputs(DEVICE)
    dense = {k: inp[k] for k in ("x", "dt", "A", "B", "C")}
    flat = {k: (v.reshape(1, batch * seqlen, *v.shape[2:]) if k != "A" else v) for k, v in dense.items()}
    total = batch * seqlen
    layouts = {
        "dense": (dense, None),
        "packed, chunk-aligned": (flat, [seqlen] * batch),
        "packed, ragged": (flat, list(ragged_lengths(batch, total, multiple=w.chunk_size))),
    }
    from flashssm.bench.impls import Unavailable, import_mamba_ssm

    try:  # (the bench's import: a stand-in for the CUDA extension its package __init__ imports first)
        mamba_chunk_scan_combined = import_mamba_ssm().mamba_chunk_scan_combined
    except Unavailable as err:
        print(f"(mamba_ssm: {err})")
        mamba_chunk_scan_combined = None
    dy_dense = torch.randn_like(dense["x"])
    y_dense = flashssm.ssd_scan(**dense, chunk_size=w.chunk_size)
    y_packed = flashssm.ssd_scan(**flat, chunk_size=w.chunk_size, cu_seqlens=_cu([seqlen] * batch, DEVICE))
    diff = (y_packed.reshape(y_dense.shape).float() - y_dense.float()).abs().max().item()
    print(f"ssd_scan {batch}x{seqlen}: packed chunk-aligned y against dense y: max |diff| {diff:.3e} "
          f"(|y| max {y_dense.float().abs().max().item():.2f})")
    print(f"{'layout':<24} {'impl':<10} {'forward ms':>11} {'fwd+bwd ms':>11} {'peak MiB':>9}")
    base = {}
    for name, (tensors, lengths) in layouts.items():
        kw = {} if lengths is None else dict(cu_seqlens=_cu(lengths, DEVICE))
        leaves = {k: v.detach().clone().requires_grad_() for k, v in tensors.items()}
        dy = dy_dense.reshape(leaves["x"].shape)
        impls = {"flashssm": lambda t, kw=kw: flashssm.ssd_scan(**t, chunk_size=w.chunk_size, **kw)}
        if mamba_chunk_scan_combined is not None:
            mkw = {} if lengths is None else _seq_idx({"cu_seqlens": _cu(lengths, DEVICE)})
            impls["mamba_ssm"] = lambda t, mkw=mkw: mamba_chunk_scan_combined(
                t["x"], t["dt"], t["A"], t["B"], t["C"], chunk_size=w.chunk_size, **mkw)
        for impl, fn in impls.items():
            plain = {k: v.detach() for k, v in leaves.items()}
            fwd = _time(lambda: fn(plain), rounds)

            def train(fn=fn):
                y = fn(leaves)
                return torch.autograd.grad(y, list(leaves.values()), dy)

            both = _time(train, rounds)
            peak = _peak_mib(train)
            if KERNELS and impl == "flashssm":
                _print_kernels(train)
            if name == "dense":
                base[impl] = (fwd, both)
            ratio = "" if name == "dense" else f"   ({fwd / base[impl][0]:.2f}x, {both / base[impl][1]:.2f}x dense)"
            print(f"{name:<24} {impl:<10} {fwd:>11.3f} {both:>11.3f} {peak:>9.0f}{ratio}")
        if lengths is not None:
            print(f"{'':<24} lengths {lengths}")


def scan_rows(batch: int, seqlen: int, rounds: int) -> None:
    w = ScanWorkload("packed", batch, seqlen, **SCAN_SHAPE)
    inp = w.make_inputs(DEVICE)
    names = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")
    dense = {k: inp[k] for k in names}
    total = batch * seqlen

    def flat(v, k):
        if k in ("u", "delta", "z", "B", "C"):  # (batch, d, seqlen) -> (1, d, batch * seqlen)
            return v.permute(1, 0, 2).reshape(1, v.shape[1], total).contiguous()
        return v

    flat_t = {k: flat(v, k) for k, v in dense.items()}
    layouts = {
        "dense": (dense, None),
        "packed, chunk-aligned": (flat_t, [seqlen] * batch),
        "packed, ragged": (flat_t, list(ragged_lengths(batch, total, multiple=64))),
    }
    y_dense = flashssm.selective_scan(**dense, delta_softplus=True)
    y_packed = flashssm.selective_scan(**flat_t, delta_softplus=True, cu_seqlens=_cu([seqlen] * batch, DEVICE))
    diff = (flat(y_dense, "u").float() - y_packed.float()).abs().max().item()
    print(f"selective_scan {batch}x{seqlen}: packed chunk-aligned y against dense y: max |diff| {diff:.3e}")
    print(f"{'layout':<24} {'impl':<10} {'forward ms':>11} {'fwd+bwd ms':>11} {'peak MiB':>9}")
    base = None
    dy_dense = torch.randn_like(dense["u"])
    for name, (tensors, lengths) in layouts.items():
        kw = {} if lengths is None else dict(cu_seqlens=_cu(lengths, DEVICE))
        leaves = {k: v.detach().clone().requires_grad_() for k, v in tensors.items()}
        dy = dy_dense if lengths is None else flat(dy_dense, "u")
        plain = {k: v.detach() for k, v in leaves.items()}
        fwd = _time(lambda: flashssm.selective_scan(**plain, delta_softplus=True, **kw), rounds)

        def train():
            y = flashssm.selective_scan(**leaves, delta_softplus=True, **kw)
            return torch.autograd.grad(y, list(leaves.values()), dy)

        both = _time(train, rounds)
        peak = _peak_mib(train)
        if base is None:
            base = (fwd, both)
        ratio = "" if lengths is None else f"   ({fwd / base[0]:.2f}x, {both / base[1]:.2f}x dense)"
        print(f"{name:<24} {'flashssm':<10} {fwd:>11.3f} {both:>11.3f} {peak:>9.0f}{ratio}")
        if lengths is not None:
            print(f"{'':<24} lengths {lengths}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ssd", action="append", default=None, help="BxL for ssd_scan (default 8x4096)")
    ap.add_argument("--scan", action="append", default=None, help="BxL for selective_scan (default 8x2048)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kernels", action="store_true", help="each ssd_scan training call's kernels (profiler)")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="set a module switch (a Python literal) for the whole run, e.g. "
                         "flashssm.ops.ssd.backward_chain.CHAIN_SPANS_PACKED=False")
    args = ap.parse_args()
    for item in args.set:
        import ast
        import importlib

        target, value = item.split("=", 1)
        module, name = target.rsplit(".", 1)
        setattr(importlib.import_module(module), name, ast.literal_eval(value))
        print(f"set {target} = {value}")
    global KERNELS
    KERNELS = args.kernels
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", __import__("triton").__version__)
    for spec in args.ssd or ["8x4096"]:
        if spec != "none":
            ssd_rows(*(int(v) for v in spec.split("x")), args.rounds)
    for spec in args.scan or ["8x2048"]:
        if spec != "none":
            scan_rows(*(int(v) for v in spec.split("x")), args.rounds)


if __name__ == "__main__":
    main()
