"""Small Triton functions shared by the kernels (imported only by kernel modules, never at package import)."""

import triton
import triton.language as tl
from triton.language.extra import libdevice


LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def fast_exp(x):
    """e^x as 2^(x log2 e). tl.exp lowers to ex2.approx without ftz: the multiply by log2 e, then a compare and two
    predicated multiplies round the MUFU that keep a subnormal result, five instructions; tl.exp2 lowers to
    ex2.approx.ftz, the MUFU alone (a result below 2^-126 is 0): two. The same bits for every normal result; a decay
    below 2^-126 weighs nothing the products keep. (The interpreter computes both in numpy.) Where it is used:
    benchmarks/notes/ssd_backward.md, sixty-third session (fewer instructions are not always faster)."""
    return tl.exp2(x * LOG2E)


@triton.jit
def process_dt(dt, dt_bias, lo, hi, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr):
    """dt + dt_bias, softplus (torch's, threshold 20), clamp to [lo, hi]; NaN stays NaN."""
    if HAS_DT_BIAS:
        dt = dt + dt_bias
    if DT_SOFTPLUS:
        dt = softplus(dt)
    dt = tl.maximum(dt, lo, propagate_nan=tl.PropagateNan.ALL)
    return tl.minimum(dt, hi, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def process_dt_grad(ddt, dt_raw, dt_bias, lo, hi, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr):
    """The gradient with respect to the raw dt (and dt_bias) from that with respect to the processed
    dt: none outside the clamp (as torch.clamp), then back through softplus (threshold 20)."""
    unclamped = process_dt(dt_raw, dt_bias, -float("inf"), float("inf"), HAS_DT_BIAS, DT_SOFTPLUS)
    ddt = tl.where((unclamped >= lo) & (unclamped <= hi), ddt, 0.0)
    if DT_SOFTPLUS:
        v = dt_raw + dt_bias
        ddt = ddt * tl.where(v <= 20.0, tl.sigmoid(v), 1.0)
    return ddt


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
def fp16_scale(c):
    """The largest |c| of a 2-D tile (at least 1e-30): what a computed fp32 operand is divided by before its fp16
    rounding, and its product multiplied by after it. With dt near 0 (~1e-6) the dt-weighted operands are fp16
    subnormals (below 6e-5) and would keep ~3e-8 of absolute precision, nothing relative."""
    return tl.maximum(tl.max(tl.max(tl.abs(c), axis=1), axis=0), 1e-30)


@triton.jit
def pow2_at_least(v):
    """The power of two at or above v (fp32, v >= 0), held within [2^-100, 2^100]: the unit a stored 16-bit tile is
    counted in (`tile_unit`); a power of two, so dividing by it and multiplying back are exact in fp32."""
    v = tl.minimum(tl.maximum(v, 7.888609052210118e-31), 1.2676506002282294e30)
    return ((v.to(tl.int32, bitcast=True) + 0x007FFFFF) & 0x7F800000).to(tl.float32, bitcast=True)


@triton.jit
def tile_unit(c):
    """The power of two at or above the largest finite |c| of a 2-D fp32 tile: c over it fits fp16 with its largest
    value in (1/2, 1], and a NaN or inf stays where it is (they do not set the unit, so the tile's other values keep
    their digits)."""
    a = tl.abs(c)
    return pow2_at_least(tl.max(tl.max(tl.where(a < float("inf"), a, 0.0), axis=1), axis=0))


@triton.jit
def store_tile(ptr, offs, unit_ptr, unit_offs, v, SCALED: tl.constexpr):
    """v (fp32) stored at ptr + offs in ptr's dtype, or (SCALED: the tiles' scaled states) in fp16 over its unit
    (`tile_unit`), which goes to unit_ptr + unit_offs. Returns (the tile as stored, its unit: 1 unscaled). (The
    addresses formed where they are used: the callers' kernels compile as they did with the stores written out.)"""
    if SCALED:
        unit = tile_unit(v)
        tl.store(unit_ptr + unit_offs, unit)
        stored = (v * (1.0 / unit)).to(ptr.dtype.element_ty)
    else:
        unit = 1.0
        stored = v.to(ptr.dtype.element_ty)
    tl.store(ptr + offs, stored)
    return stored, unit


@triton.jit
def silu(v):
    return v * tl.sigmoid(v)


@triton.jit
def silu_grad(v, sig):
    """d silu(v) / dv, given sig = sigmoid(v) (callers often need it for the gate too)."""
    return sig * (1.0 + v * (1.0 - sig))


@triton.jit
def process_delta(delta, delta_bias, HAS_DELTA_BIAS: tl.constexpr, DELTA_SOFTPLUS: tl.constexpr,
                  FAST: tl.constexpr = False):
    """Mamba-1's delta + delta_bias, then softplus (torch's, threshold 20); no clamp."""
    if HAS_DELTA_BIAS:
        delta = delta + delta_bias
    if DELTA_SOFTPLUS:
        delta = softplus(delta, FAST)
    return delta


@triton.jit
def softplus(v, FAST: tl.constexpr = False):
    """torch's softplus (threshold 20), accurate for very negative v too: there log(1 + e^v) loses
    the digits of e^v to the rounding of 1 + e^v (20 % at v = -15), so below e^v = 0.1 the series
    e - e^2/2 + ... - e^6/6 (remainder < e^7/7 = 1.5e-8 relative) replaces it; it needs no log
    (the GPU's approximate log is off by ~1e-7 absolute, too much near log(1) = 0).

    FAST (GPU only: the interpreter has no fast_log2f): exp2 and lg2.approx, one instruction each,
    instead of libdevice's logf and exp's denormal guards (~45 instructions); above e^v = 0.1,
    lg2.approx's ~2^-22 absolute error is under 2e-6 relative."""
    if FAST:
        e = tl.exp2(v * 1.4426950408889634)
    else:
        e = tl.exp(v)
    series = e * (1.0 - e * (0.5 - e * (1.0 / 3.0 - e * (0.25 - e * (0.2 - e * (1.0 / 6.0))))))
    if FAST:
        above = libdevice.fast_log2f(1.0 + e) * 0.6931471805599453
    else:
        above = tl.log(1.0 + e)
    return tl.where(v <= 20.0, tl.where(e < 0.1, series, above), v)


@triton.jit
def columns(x, R: tl.constexpr, T: tl.constexpr):
    """The T columns of an [R, T] tile whose rows sit in one thread's registers (free splits)."""
    if T == 1:
        return (tl.reshape(x, (R,)),)
    elif T == 2:
        return tl.split(x)
    elif T == 4:
        e, o = tl.split(tl.reshape(x, (R, 2, 2)))  # columns (0, 2), (1, 3)
        c0, c2 = tl.split(e)
        c1, c3 = tl.split(o)
        return c0, c1, c2, c3
    else:
        e, o = tl.split(tl.reshape(x, (R, 4, 2)))  # even, odd columns
        c0, c2, c4, c6 = columns(e, R, 4)
        c1, c3, c5, c7 = columns(o, R, 4)
        return c0, c1, c2, c3, c4, c5, c6, c7


@triton.jit
def join_columns(c, R: tl.constexpr, T: tl.constexpr):
    """The inverse of `columns`: a tuple of T [R] vectors as an [R, T] tile."""
    if T == 1:
        return tl.reshape(c[0], (R, 1))
    elif T == 2:
        return tl.join(c[0], c[1])
    elif T == 4:
        return tl.reshape(tl.join(tl.join(c[0], c[2]), tl.join(c[1], c[3])), (R, 4))
    else:
        e = join_columns((c[0], c[2], c[4], c[6]), R, 4)
        o = join_columns((c[1], c[3], c[5], c[7]), R, 4)
        return tl.reshape(tl.join(e, o), (R, 8))


@triton.jit
def prefetch(p, LEVEL: tl.constexpr):
    """Ask for the 128-byte line at each pointer of p to be brought into L1 or L2 (LEVEL "L1" or "L2";
    no register is written, so nothing waits for it; the GPU drops a prefetch it cannot serve). GPU
    only: the interpreter cannot run inline PTX. LEVEL has no default: Triton 3.6 fails to compile a
    call that leaves a constexpr string argument to its default (3.9 accepts it)."""
    if LEVEL == "L2":
        tl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [p], dtype=tl.int32,
                                  is_pure=False, pack=1)
    else:
        tl.inline_asm_elementwise("prefetch.global.L1 [$1];\n\tmov.u32 $0, 0;", "=r,l", [p], dtype=tl.int32,
                                  is_pure=False, pack=1)


@triton.jit
def launch_dependents():
    """griddepcontrol.launch_dependents: the launch after this one, if it was launched by programmatic dependent launch
    (Hopper's PDL), may start now; it waits for this launch's end itself before it reads what this one writes
    (griddepcontrol.wait). Nothing where the next launch was not so launched. GPU (sm_90) only."""
    tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32, is_pure=False,
                              pack=1)


@triton.jit
def take_ticket(counter_ptr, n_programs):
    """This program's place in launch order. The program that takes the last ticket puts the counter
    back to zero for the next launch: every other program of this launch has taken its ticket by
    then, and the next launch on the stream starts after this one ends. (A second counter of
    finished programs did this before: one more atomic on one hot address per program, 4% of the
    stall samples at 8x4K, benchmarks/notes/ssd_forward.md.) Both atomics are relaxed: a ticket orders
    the programs, it carries no data (what one program hands another goes through a flag's release and
    acquire), and Triton's default (acq_rel) put a fence and an invalidation of the whole SM's L1 at
    every program's start, dropping the lines its neighbours had prefetched (CCTL.IVALL in the SASS)."""
    ticket = tl.atomic_add(counter_ptr, 1, sem="relaxed")
    if ticket == n_programs - 1:
        tl.atomic_xchg(counter_ptr, 0, sem="relaxed")
    return ticket
