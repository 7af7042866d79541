"""Timing, the device's ceilings, and accuracy against a float64 reference."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass

import torch

from flashssm.bench.floors import Ceilings

# An implementation passes when ‖y − ref‖/‖ref‖ is under this (by input dtype) and y has no NaN.
# bf16 output rounding alone costs about 1.7e-3; the peers measure 2.2e-3 to 2.5e-3 (ANCHORS.md).
ACCURACY_LIMITS = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 2e-3}
ACCURACY_PIECE = 1 << 26  # elements: a larger output is compared in pieces of this many


def time_ms(fn, device: torch.device, warmup_ms: float = 25, rep_ms: float = 100) -> float:
    """Median time of one call in milliseconds.

    On a GPU, triton.testing.do_bench: CUDA events around each call, the L2 cache flushed before
    each (so inputs that fit in L2 are not read from it). On the CPU, wall time of repeated calls
    (a warm-up call unless warmup_ms is 0, then calls until rep_ms has passed: at least one, at most 100).
    """
    if device.type == "cuda":
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    if warmup_ms > 0:
        fn()
    times = []
    deadline = time.perf_counter() + rep_ms / 1e3
    while not times or (time.perf_counter() < deadline and len(times) < 100):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def measure_ceilings(device: torch.device) -> Ceilings:
    """Device-to-device copy bandwidth (bytes read + written) and the bf16 8192^3 GEMM rate."""
    nbytes = 1 << 30
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).normal_()
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src), device)
    del src, dst
    n = 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    gemm_ms = time_ms(lambda: a @ b, device)
    del a, b
    torch.cuda.empty_cache()
    return Ceilings(copy_bytes_per_s=2 * nbytes / (copy_ms / 1e3), gemm_flops_per_s=2 * n**3 / (gemm_ms / 1e3))


@dataclass(frozen=True)
class Accuracy:
    rel_err: float          # ‖y − ref‖ / ‖ref‖
    within_1e3: float       # share of elements with |y − ref| <= 1e-3 + 1e-3 |ref|
    within_1pct: float      # the same at 1e-2
    nan: int                # NaN elements
    passed: bool

    def as_dict(self) -> dict:
        return asdict(self)


def accuracy(y, ref, input_dtype: torch.dtype) -> Accuracy:
    """Compare y with a float64 reference of the same shape; for tuples (a step's y and state),
    every part, reporting the worst figures."""
    if isinstance(ref, tuple):
        if not isinstance(y, tuple) or len(y) != len(ref):
            return Accuracy(float("inf"), 0.0, 0.0, 0, False)
        parts = [accuracy(a, b, input_dtype) for a, b in zip(y, ref)]
        return Accuracy(max(p.rel_err for p in parts), min(p.within_1e3 for p in parts),
                        min(p.within_1pct for p in parts), sum(p.nan for p in parts), all(p.passed for p in parts))
    if not isinstance(y, torch.Tensor) or y.shape != ref.shape:
        return Accuracy(float("inf"), 0.0, 0.0, 0, False)
    # in pieces of ACCURACY_PIECE elements (one for most outputs): a float64 temporary of the whole output is 10.7 GB
    # at 1 x 256K of the Mamba-1 2.8B shape
    n = y.numel()
    yf, rf = y.reshape(-1), ref.reshape(-1)
    nan, err2, ref2, in_1e3, in_1pct = 0, 0.0, 0.0, 0, 0
    for i in range(0, n, ACCURACY_PIECE):
        yd, rd = yf[i:i + ACCURACY_PIECE].double(), rf[i:i + ACCURACY_PIECE]
        nan += int(torch.isnan(yd).sum())
        diff = (yd - rd).abs()
        err2 += float(diff.square().sum())
        ref2 += float(rd.square().sum())
        in_1e3 += int((diff <= 1e-3 + 1e-3 * rd.abs()).sum())
        in_1pct += int((diff <= 1e-2 + 1e-2 * rd.abs()).sum())
    rel = err2 ** 0.5 / max(ref2 ** 0.5, 1e-300)
    within_1e3, within_1pct = (in_1e3 / n, in_1pct / n) if n else (math.nan, math.nan)  # (the mean of nothing)
    passed = nan == 0 and rel <= ACCURACY_LIMITS[input_dtype]
    return Accuracy(rel, within_1e3, within_1pct, nan, passed)
