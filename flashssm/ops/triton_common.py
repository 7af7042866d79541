"""Small Triton functions shared by the kernels (imported only by kernel modules, never at package import)."""

import triton
import triton.language as tl


@triton.jit
def process_dt(dt, dt_bias, lo, hi, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr):
    """dt + dt_bias, softplus (torch's, threshold 20), clamp to [lo, hi]; NaN stays NaN."""
    if HAS_DT_BIAS:
        dt = dt + dt_bias
    if DT_SOFTPLUS:
        small = tl.exp(dt)  # log1p(e^dt) ~ e^dt below -15, where 1 + e^dt rounds to 1
        dt = tl.where(dt <= 20.0, tl.where(dt < -15.0, small, tl.log(1.0 + small)), dt)
    dt = tl.maximum(dt, lo, propagate_nan=tl.PropagateNan.ALL)
    return tl.minimum(dt, hi, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def cache_row(idx_ptr, i_b, o, HAS_INDICES: tl.constexpr):
    """The cache row of batch row i_b (int64; idx_ptr[i_b] with indices, else i_b), and whether it is live
    (not a negative padding row) as a vector shaped like `o`: the interpreter rejects scalar & vector masks."""
    if HAS_INDICES:
        row = tl.load(idx_ptr + i_b).to(tl.int64)
    else:
        row = i_b.to(tl.int64)
    return row, (o * 0 + row) >= 0


@triton.jit
def silu(v):
    return v * tl.sigmoid(v)


@triton.jit
def process_delta(delta, delta_bias, HAS_DELTA_BIAS: tl.constexpr, DELTA_SOFTPLUS: tl.constexpr):
    """Mamba-1's delta + delta_bias, then softplus (torch's, threshold 20); no clamp."""
    if HAS_DELTA_BIAS:
        delta = delta + delta_bias
    if DELTA_SOFTPLUS:
        small = tl.exp(delta)
        delta = tl.where(delta <= 20.0, tl.where(delta < -15.0, small, tl.log(1.0 + small)), delta)
    return delta
