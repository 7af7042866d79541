"""Differential fuzzing of every public op against its float64 reference, forward and gradients.

Each case is drawn from one 32-bit case seed: shapes (batch, seqlen 1 / around the chunk / random,
packed varlen batches mixing empty, single-token and long sequences, nheads/ngroups splits,
headdim, dstate, chunk sizes), dtypes and state dtypes, every optional argument on or off,
non-contiguous inputs and extreme values (dt near 0, dt*A near -80, zero rows of B and C).
The kernel's outputs (and, for the differentiable ops, its gradients for random incoming
gradients) are compared with the reference run in float64 on the same inputs. Packed cases also
put a NaN at one token of one sequence (inputs, then incoming gradient): the other sequences'
outputs and gradients must stay finite.

    python -m tests.fuzz.fuzz --seed 1 --budget 600           # cases until the budget (seconds) is spent
    python -m tests.fuzz.fuzz --op ssd_scan --case 123456789  # one case again (the reproducer)
    python -m tests.fuzz.fuzz --shapes model --budget 600     # GPU: every op at the shapes models run

On the CPU set TRITON_INTERPRET=1 (done here when no GPU is present) before flashssm is imported.
bf16 inputs are drawn only on a GPU: the interpreter's bf16 tl.dot is wrong (Triton 3.9).
Every failure prints one line that replays it. A run stopped from outside (SIGTERM, as `timeout` sends, or an
interrupt) still prints its summary of the cases finished, and exits 124.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import flashssm  # noqa: E402
from flashssm.ops.conv1d import reference as conv_ref  # noqa: E402
from flashssm.ops.norm import add_rmsnorm  # noqa: E402
from flashssm.ops.norm import reference as norm_ref  # noqa: E402
from flashssm.ops.selective_scan import reference as scan_ref  # noqa: E402
from flashssm.ops.ssd import reference as ssd_ref  # noqa: E402

# relative error (norm of the difference over the reference's norm) allowed per input dtype, as in
# tests/helpers.py; gradients summed over every token (dA, dt_bias, D, delta_bias) 4x, as in the tests
TOL = {torch.float32: 2e-3, torch.float16: 5e-3, torch.bfloat16: 3e-2}
REDUCED = {"A", "dt_bias", "D", "delta_bias", "weight", "bias"}


@dataclass
class Outcome:
    checks: int = 0
    failures: list[str] = field(default_factory=list)


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.detach().double() - want.detach()).norm() / want.detach().norm().clamp_min(1e-300))


def compare(out: Outcome, name: str, got, want, tol: float, scale_free: float = 1e-6, cancel=None):
    """One output against the float64 reference: no NaN/inf where the reference is finite, and
    the relative error within `tol` (or, where the reference is ~0, an absolute bound). `cancel`
    (a tensor like `want`): what rounding terms that cancel in exact arithmetic may leave, per
    element: where the relative check fails, every element within tol |want| + cancel of the
    reference passes."""
    out.checks += 1
    if got is None or want is None:
        if (got is None) != (want is None):
            out.failures.append(f"{name}: {'missing' if got is None else 'unexpected'}")
        return
    if got.shape != want.shape:
        out.failures.append(f"{name}: shape {tuple(got.shape)} != {tuple(want.shape)}")
        return
    bad = ~torch.isfinite(got.double()) & torch.isfinite(want)
    if bad.any():
        out.failures.append(f"{name}: {int(bad.sum())} non-finite values where the reference is finite")
        return
    if want.norm() < 1e-9:
        if got.double().abs().max() > scale_free:
            out.failures.append(f"{name}: {float(got.abs().max()):.2e} where the reference is 0")
        return
    err = rel_err(got, want)
    # what rounding the reference to the output's dtype alone costs (16-bit subnormals: dt near 0)
    floor = rel_err(want.to(got.dtype), want) if got.dtype != torch.float64 else 0.0
    if cancel is not None and not err <= tol + 2 * floor:
        excess = (got.detach().double() - want).abs() - tol * want.abs() - cancel
        if excess.max() > 0:
            out.failures.append(f"{name}: off by {float(excess.max()):.2e} beyond tol x |reference| + the "
                                f"cancellation allowance (max {float(cancel.max()):.2e}; relative error {err:.3e})")
        return
    if not err <= tol + 2 * floor:
        allowance = f" + 2 x {floor:.1e}" if floor > tol / 10 else ""
        out.failures.append(f"{name}: relative error {err:.3e} > {tol:.0e}{allowance}")


# ---- input helpers ----

def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(g, *shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype)


def rand(g, *shape):
    return torch.rand(*shape, generator=g)


def place(t: torch.Tensor | None, device, strided: bool, rng: random.Random):
    """t on the device; with `strided`, as a non-contiguous view (every other element of its last
    dimension, a transposed layout, or, from 3 dimensions, its last two dimensions as a block of columns of
    wider rows, as a model's split of one projection gives them) holding the same values."""
    if t is None:
        return None
    if not strided or t.dim() == 0:
        return t.to(device)
    pick = rng.random()
    if t.dim() >= 2 and pick < 0.4:
        # the last two dimensions stored swapped
        base = t.transpose(-1, -2).contiguous().to(device)
        return base.transpose(-1, -2)
    if t.dim() >= 3 and pick < 0.7:
        # rows of the last two dimensions' elements and `pad` more: unit inner stride, a row stride past the block's
        # width (a multiple of 8 but not of 16, of 16, or odd: what a kernel may or may not move in 16-byte pieces)
        pad = rng.choice([8, 16, 24, 3])
        n = t.shape[-2] * t.shape[-1]
        wide = torch.zeros(*t.shape[:-2], n + pad, dtype=t.dtype)
        wide[..., :n] = t.flatten(-2)
        return wide.to(device)[..., :n].unflatten(-1, t.shape[-2:])
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
    wide[..., ::2] = t
    return wide.to(device)[..., ::2]


def float64(kw: dict) -> dict:
    return {k: v.detach().double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}


def leaves(kw: dict, names) -> dict:
    out = dict(kw)
    for k in names:
        if torch.is_tensor(kw.get(k)) and kw[k].is_floating_point():
            out[k] = kw[k].detach().clone().requires_grad_()
    return out


def grads_of(outputs, grads_in, kw: dict, names) -> dict:
    pairs = [(o, g) for o, g in zip(outputs, grads_in) if o is not None]
    torch.autograd.backward([o for o, _ in pairs], [g.to(o.dtype) for o, g in pairs])
    return {k: kw[k].grad for k in names if torch.is_tensor(kw.get(k)) and kw[k].requires_grad}


def lengths_mix(rng: random.Random, long: int) -> list[int]:
    """Packed sequence lengths: empty, single-token and longer ones, at least one token in all."""
    n = rng.randint(1, 4)
    pick = [rng.choice([0, 1, 1, rng.randint(2, long), rng.randint(2, long)]) for _ in range(n)]
    if sum(pick) == 0:
        pick[-1] = rng.randint(1, long)
    return pick


def packed(lens: list[int]) -> tuple:
    """(batch, seqlen, lengths, cu_seqlens) of one packed batch of sequences of these lengths."""
    return 1, sum(lens), lens, torch.tensor([0, *itertools.accumulate(lens)], dtype=torch.int32)


def model_lengths(rng: random.Random, n: int, long: int) -> list[int]:
    """`n` packed sequence lengths for the model shapes: empty, single-token and up to `long` tokens, the last one
    never empty."""
    lens = [rng.choice([0, 1, rng.randint(2, long), rng.randint(2, long)]) for _ in range(n)]
    lens[-1] = max(lens[-1], 1)
    return lens


def packing(rng: random.Random, long: int, plain):
    """(batch, seqlen, lengths, cu_seqlens): 30 % of cases one packed batch of `lengths_mix`
    sequences, the others plain() -> (batch, seqlen) and no packing."""
    if rng.random() < 0.3:
        return packed(lengths_mix(rng, long))
    batch, seqlen = plain()
    return batch, seqlen, None, None


def rates(g, shape, softplus: bool) -> torch.Tensor:
    """dt (delta) before its bias: N(-3, 1) ahead of a softplus (about 0.05), else 0.001 .. 0.1."""
    return randn(g, *shape) - 3.0 if softplus else torch.exp(rand(g, *shape) * 4.6 - 6.9)


def incoming_layout(t: torch.Tensor, g) -> torch.Tensor:
    """An incoming gradient in a random layout, as autograd hands them over: contiguous, its last two axes transposed
    in memory, or one value expanded over every element (strides 0: the gradient of `out.sum()`)."""
    pick = int(torch.randint(3, (1,), generator=g))
    if pick == 1 and t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if pick == 2:
        return t.flatten()[:1].reshape((1,) * t.dim()).expand(t.shape)
    return t


def differential(out: Outcome, fn, ref_fn, kw: dict, g, device, *, outputs, backprop, grads: bool, tol: float,
                 also_reduced=(), zero_scale=None, cancellation=None):
    """fn(**kw) against ref_fn on kw in float64: every output named in `outputs` (what the calls
    return, a tensor or a tuple), then, with `grads`, the gradients of every input of kw for
    random incoming gradients of the outputs named in `backprop`. Gradients summed over tokens
    (REDUCED, also_reduced) get 4x the tolerance; where a reference gradient is 0,
    zero_scale(incoming, want) -> {input: size of the terms that cancel there} bounds it;
    cancellation(incoming) -> {input: per-element allowance} replaces the relative check (compare's
    `cancel`) for gradients that are differences of much larger rounded terms."""
    names = list(kw)
    got_kw = leaves(kw, names) if grads else kw
    ref_kw = leaves(float64(kw), names) if grads else float64(kw)
    got = _named(fn(**got_kw), outputs)
    want = _named(ref_fn(**ref_kw), outputs)
    for name in outputs:
        compare(out, name, got[name], want[name], tol)
    if not grads:
        return
    incoming = {name: incoming_layout(randn(g, *got[name].shape).to(device=device, dtype=got[name].dtype), g)
                for name in backprop}
    got_grads = grads_of([got[n] for n in backprop], list(incoming.values()), got_kw, names)
    want_grads = grads_of([want[n] for n in backprop], [d.double() for d in incoming.values()], ref_kw, names)
    scale = zero_scale(incoming, want) if zero_scale else {}
    allow = cancellation(incoming) if cancellation else {}
    for k in names:
        k_tol = tol * (4 if k in REDUCED or k in also_reduced else 1)
        compare(out, f"d{k}", got_grads.get(k), want_grads.get(k), k_tol, 1e-5 + k_tol * scale.get(k, 0.0),
                cancel=allow.get(k))


def packed_nan_stays(out: Outcome, fn, kw: dict, cu: torch.Tensor | None, per_token, axis: int, grads: bool, g) -> None:
    """Packed sequences (cu): a NaN at one token of one sequence, in every input named in `per_token` (their token axis
    `axis`), then in the first output's incoming gradient at that token. Every other sequence's first output (its
    tokens along `axis`), second output (per sequence: final or last states) and, with `grads`, the per-token gradients
    of `per_token` must stay finite wherever the clean call's are. (The selective scan's kernels once carried a NaN
    into every later sequence's outputs and every earlier one's gradients: notes/selective_scan.md, fifty-third
    session.)"""
    if cu is None:
        return
    offsets = cu.tolist()
    spans = [(i, a, b) for i, (a, b) in enumerate(zip(offsets, offsets[1:])) if b > a]
    if len(spans) < 2:
        return
    seq, s0, s1 = spans[int(torch.randint(len(spans), (1,), generator=g))]
    tok = s0 + int(torch.randint(s1 - s0, (1,), generator=g))
    other = torch.ones(offsets[-1], dtype=torch.bool)
    other[s0:s1] = False
    others = [i for i in range(len(offsets) - 1) if i != seq]

    def at_token(t: torch.Tensor) -> torch.Tensor:
        t = t.detach().clone()
        t.select(axis % t.dim(), tok).fill_(float("nan"))
        return t

    def run(inputs: dict, nan_dy: bool):
        got_kw = leaves(inputs, per_token) if grads else inputs
        res = _named(fn(**got_kw), ["a", "b"])
        grads_out = {}
        if grads:
            dy = torch.ones_like(res["a"])
            grads_out = grads_of([res["a"], res["b"]], [at_token(dy) if nan_dy else dy,
                                                        None if res["b"] is None else torch.ones_like(res["b"])],
                                 got_kw, per_token)
        return res, grads_out

    def finite_where(got: torch.Tensor, clean: torch.Tensor, what: str):
        ok = torch.isfinite(got) | ~torch.isfinite(clean)
        if not bool(ok.all()):
            out.failures.append(f"a NaN at token {tok} of packed sequence {seq} reached {what}")

    def tokens_of(t: torch.Tensor) -> torch.Tensor:
        return t.movedim(axis % t.dim(), 0)[other.to(t.device)]

    out.checks += 1
    with torch.no_grad() if not grads else torch.enable_grad():
        clean, clean_g = run(kw, False)
        bad_in = dict(kw, **{k: at_token(kw[k]) for k in per_token if torch.is_tensor(kw.get(k))})
        for label, (res, gr) in (("inputs", run(bad_in, False)), ("dy", run(kw, True))):
            finite_where(tokens_of(res["a"]), tokens_of(clean["a"]), f"another sequence's output (NaN {label})")
            if res["b"] is not None:
                finite_where(res["b"][others], clean["b"][others], f"another sequence's state (NaN {label})")
            for k, v in gr.items():
                finite_where(tokens_of(v), tokens_of(clean_g[k]), f"d{k} of another sequence (NaN {label})")


def repeated_call(out: Outcome, fn, names) -> None:
    """fn() twice without gradients: the second call replays the first one's recorded steps (`_runtime.Prepared`; not
    for packed sequences, where both take the whole path) and must give its bits, NaN where it has NaN."""
    from flashssm import _runtime

    _runtime.clear_prepared()
    with torch.no_grad():
        whole, replayed = (_named(fn(), names) for _ in range(2))
    out.checks += 1
    for name in names:
        a, b = whole[name], replayed[name]
        if (a is None) != (b is None) or (a is not None and not torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)):
            out.failures.append(f"{name}: a repeated call (a replay) differs from the first (the whole path)")


def repeated_training_call(out: Outcome, fn, kw: dict, g, device, *, deterministic: bool = True) -> None:
    """fn(**leaves) twice with gradients of every floating-point input, on the same incoming gradients: the first call
    takes the whole path, the second replays its recorded forward and backward (torch calls included). Under the
    deterministic mode (the default here) the gradients must agree bit for bit. With `deterministic=False` the calls
    run in the default mode, whose float atomics may add in another order on a GPU: each gradient within one unit of
    its dtype (a sum rounded either side of a boundary) plus 1e-3 of its largest value; a replay that read or wrote
    the wrong buffer is off by far more."""
    from flashssm import _runtime

    _runtime.clear_prepared()
    names, incoming, runs = list(kw), None, []
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        for _ in range(2):
            got_kw = leaves(kw, names)
            outs = fn(**got_kw)
            outs = list(outs) if isinstance(outs, tuple) else [outs]
            if incoming is None:
                incoming = [None if o is None else randn(g, *o.shape).to(device) for o in outs]
            runs.append(grads_of(outs, incoming, got_kw, names))
    finally:
        torch.use_deterministic_algorithms(was)
    out.checks += 1
    for k, a in runs[0].items():
        b = runs[1].get(k)
        rtol = atol = 0.0
        if not deterministic and a.numel():
            rtol, atol = torch.finfo(a.dtype).eps, 1e-3 * float(a.detach().abs().max()) + 1e-30
        if b is None or not torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            out.failures.append(f"d{k}: a repeated training call (a replay) differs from the first (the whole path)")


def _named(result, names) -> dict:
    parts = result if isinstance(result, tuple) else (result,)
    return {name: parts[i] if i < len(parts) else None for i, name in enumerate(names)}


def step_check(out: Outcome, fn, ref_fn, state: torch.Tensor, kw: dict, options: dict, device, tol: float):
    """A decoding step on a copy of `state` against the reference on it in float64: y, and the
    state updated in place (the reference's rounded to the state's dtype)."""
    st, st_ref = state.to(device), state.double().to(device)
    y = fn(st, **kw, **options)
    y_ref = ref_fn(st_ref, **float64(kw), **options)
    compare(out, "y", y, y_ref, tol)
    compare(out, "state", st, st_ref.to(state.dtype).double(), tol)


def seqlen_near(rng: random.Random, chunk: int, longest: int) -> int:
    return rng.choice([1, 2, chunk - 1, chunk, chunk + 1, 2 * chunk + 3, rng.randint(1, longest)])


def input_dtypes(on_gpu: bool):
    return [torch.float32, torch.float16] + ([torch.bfloat16] if on_gpu else [])


# ---- ssd_scan ----

# Model shapes (`--shapes model`, GPU only): bf16 inputs mostly, as models run
MODEL_DTYPES = [torch.bfloat16] * 3 + [torch.float16, torch.float32]
# ssd_scan's dA allowance holds pairwise tensors of batch x heads x seqlen^2 float64 elements; the model draws keep
# that under this many (a few GB of GPU memory).
PAIRS = 2e8


def ssd_shape(rng: random.Random, shapes: str, device) -> tuple:
    """(dtype, chunk, ngroups, nheads, headdim, dstate, batch, seqlen, lens, cu) of an ssd_scan case. "small": the
    interpreter's odd shapes. "model": the shapes models run, which take the GPU's fast paths (bf16 mostly, headdim
    64/128, dstate 64-256, chunks 64-256): a third with chains enough for the forward's late publish (sequences x
    heads >= twice the programs the GPU holds), the others batch 1-2, where long sequences run in early-publish spans
    (one wave of them when unpacked)."""
    if shapes == "small":
        dtype = rng.choice(input_dtypes(device.type == "cuda"))
        chunk = rng.choice([16, 32, 64])
        ngroups = rng.choice([1, 1, 2, 3])
        nheads = ngroups * rng.choice([1, 2])
        headdim = rng.choice([4, 7, 16, 24, 33, 64])
        dstate = rng.choice([1, 5, 16, 17, 32, 64])
        batch, seqlen, lens, cu = packing(rng, 3 * chunk,
                                          lambda: (rng.randint(1, 2), seqlen_near(rng, chunk, 3 * chunk)))
        return dtype, chunk, ngroups, nheads, headdim, dstate, batch, seqlen, lens, cu
    from flashssm.ops.ssd import forward as ssd_forward

    dtype = rng.choice(MODEL_DTYPES)
    chunk = rng.choice([64, 128, 256])
    headdim = rng.choice([64, 64, 128])
    dstate = rng.choice([64, 128, 128, 256])
    ngroups = rng.choice([1, 1, 2, 8])
    if rng.random() < 1 / 3:  # many chains: late publish
        nheads = ngroups * rng.randint(max(1, 24 // ngroups), 64 // ngroups)
        seqs = -(-2 * ssd_forward._resident_programs(device) // nheads) + rng.randint(0, 2)
    else:
        nheads = ngroups * rng.choice([1, 2, 4])
        seqs = rng.randint(1, 2) if rng.random() < 0.7 else rng.randint(2, 4)
    longest = max(chunk + 2, min(8192, int((PAIRS / (seqs * nheads)) ** 0.5)))
    if rng.random() < 0.3:  # packed: `seqs` sequences, empty and single-token ones among them
        return (dtype, chunk, ngroups, nheads, headdim, dstate, *packed(model_lengths(rng, seqs, longest // seqs)))
    seqlen = rng.choice([1, chunk - 1, chunk + 1, rng.randint(chunk, longest), rng.randint(2 * chunk, longest)])
    return dtype, chunk, ngroups, nheads, headdim, dstate, seqs, seqlen, None, None


def case_ssd_scan(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, chunk, ngroups, nheads, headdim, dstate, batch, seqlen, lens, cu = ssd_shape(rng, shapes, device)
    num_seqs = len(lens) if lens else batch
    opts = dict(D=rng.choice([None, "h", "hp"]), z=rng.random() < 0.5, dt_bias=rng.random() < 0.5,
                dt_softplus=rng.random() < 0.5, dt_limit=rng.random() < 0.3, init=rng.random() < 0.5,
                state_dtype=rng.choice([None, None, torch.float16, torch.bfloat16]),
                extreme=rng.choice(["none", "none", "dt_tiny", "decay80", "zero_bc"]),
                strided=rng.random() < 0.3, grads=rng.random() < 0.5)
    desc = dict(op="ssd_scan", dtype=str(dtype), chunk=chunk, batch=batch, seqlen=seqlen, lens=lens, nheads=nheads,
                ngroups=ngroups, headdim=headdim, dstate=dstate, **{k: str(v) for k, v in opts.items()})

    x = randn(g, batch, seqlen, nheads, headdim, dtype=dtype)
    B = randn(g, batch, seqlen, ngroups, dstate, dtype=dtype)
    C = randn(g, batch, seqlen, ngroups, dstate, dtype=dtype)
    A = -torch.exp(rand(g, nheads) * 2.5)
    dt = rates(g, (batch, seqlen, nheads), opts["dt_softplus"])
    if opts["extreme"] == "dt_tiny":
        dt = torch.full_like(dt, -14.0 if opts["dt_softplus"] else 1e-6)
    elif opts["extreme"] == "decay80":
        # some tokens decay the state by exp(-80): dt * A = -80 (no clamp or softplus in the way)
        opts["dt_softplus"], opts["dt_limit"], opts["dt_bias"] = False, False, False
        desc.update(dt_softplus="False", dt_limit="False", dt_bias="False")
        hit = rand(g, batch, seqlen, 1) < 0.2
        dt = torch.where(hit, 80.0 / -A, rates(g, (batch, seqlen, nheads), False))
    elif opts["extreme"] == "zero_bc":
        B[rand(g, batch, seqlen) < 0.3] = 0
        C[rand(g, batch, seqlen) < 0.3] = 0
    # a dt_limit below 0 in a third of the limited cases (the contract clamps dt to any low <= high, so dt keeps its
    # sign: fp16's scaled operands once took their unit from the largest w rather than |w|, ssd_forward.md, sixty-first
    # session), drawn from a generator of its own so that every other draw of a case stays as it was; without the
    # softplus a fifth of the tokens' dt turn negative. The state grows by exp(-dt A) a token there: low keeps that
    # below e^0.5 over the longest sequence.
    sign = random.Random(seed * 3 + 1)
    low = 1e-3
    if opts["dt_limit"] and opts["extreme"] != "decay80" and sign.random() < 1 / 3:
        low = -0.5 / (max(lens or [seqlen]) * float(-A.min()))
        desc["dt_limit"] = f"({low:.2e}, 0.5)"
        if not opts["dt_softplus"]:
            flip = torch.rand(dt.shape, generator=torch.Generator().manual_seed(sign.randrange(2**31))) < 0.2
            dt = torch.where(flip, -dt, dt)
    kw = dict(x=x, dt=dt, A=A, B=B, C=C)
    if opts["D"] == "h":
        kw["D"] = randn(g, nheads)
    elif opts["D"] == "hp":
        kw["D"] = randn(g, nheads, headdim)
    if opts["z"]:
        kw["z"] = randn(g, batch, seqlen, nheads, headdim, dtype=dtype)
    if opts["dt_bias"]:
        kw["dt_bias"] = randn(g, nheads) * 0.5
    if opts["init"]:
        kw["initial_states"] = randn(g, num_seqs, nheads, headdim, dstate)
    for k in list(kw):
        kw[k] = place(kw[k], device, opts["strided"] and kw[k].dim() >= 3, rng)
    options = dict(chunk_size=chunk, dt_softplus=opts["dt_softplus"], cu_seqlens=None if cu is None else cu.to(device))
    if opts["dt_limit"]:
        options["dt_limit"] = (low, 0.5)

    def zero_scale(incoming, want):
        # where the reference's dA is 0 (single tokens from a zero state), the kernel's is a difference
        # of terms of size dt <dfinal, final>, each rounded to the state dtype: the bound scales with them
        return {"A": float(dt.abs().max()) * float(incoming["final_states"].norm())
                * float(want["final_states"].detach().norm())}

    def decay_cancellation(incoming):
        # 16-bit inputs or states: the backward's products of computed values run in tf32 or in scaled
        # 16-bit parts, and the states it reads are rounded to their dtype (unit roundoff ~2^-11).
        # dA_h is a sum over pairs (i, j), j <= i, of terms P_ij S_ij,
        # P_ij = (dy_i . x_j)(C_i . B_j) exp(cs_i - cs_j) dt_j and S_ij the dt summed over (j, i]
        # (the initial state's and the final-state gradient's pairs too). Where those terms cancel,
        # the relative check measures the cancellation, not the kernel: past it, an element passes
        # within one unit roundoff of its terms, 2^-11 sum |P_ij| S_ij (fuzz case 2992274103: four
        # tokens' terms cancelling to ~1/1000 of them, fp16, dA 2.02e-2 off). Random incoming
        # gradients give every dA terms of both signs, so the unit is not looser: with 8 of them a
        # planted 30 % error in dA passed in 1 of 7 16-bit cases that caught it before.
        # With tokens at dt A = -80 (dt ~ 7-80, decay80) the kernel's da_k is a difference of prefix
        # and suffix sums of pairs that reach both ends of the chunk (benchmarks/notes/hardening.md),
        # each rounded on both sides: the allowance there is 2^-11 x 8 x sum_k dt_k x (the size of
        # every pair). dt as the scan runs it.
        k64 = float64(kw)
        dtp = ssd_ref.process_dt(k64["dt"], k64.get("dt_bias"), opts["dt_softplus"],
                                 options.get("dt_limit", (0.0, math.inf)), torch.float64).permute(0, 2, 1)  # (b, h, l)
        cs = torch.cumsum(dtp * k64["A"][:, None], dim=2)  # no varlen reset: an upper bound
        dtp = dtp.abs()  # (a dt_limit below 0: the terms' sizes take |dt|)
        spans = torch.cumsum(dtp, dim=2)  # the |dt| summed over tokens 0..i
        dy = incoming["y"].double()
        if "z" in k64:
            dy = dy * torch.nn.functional.silu(k64["z"])
        rep = nheads // ngroups
        Bh = k64["B"].repeat_interleave(rep, dim=2)  # (b, l, h, n)
        Ch = k64["C"].repeat_interleave(rep, dim=2)
        dyx = torch.einsum("bihp,bjhp->bhij", dy, k64["x"]).abs()
        cb = torch.einsum("bihn,bjhn->bhij", Ch, Bh).abs()
        causal = torch.ones(seqlen, seqlen, dtype=torch.bool).tril().to(dyx.device)
        decay = torch.exp(torch.where(causal, cs[..., :, None] - cs[..., None, :], -torch.inf))
        pairs = dyx * cb * decay * dtp[..., None, :]  # (b, h, i, j)
        df = incoming["final_states"].double()
        per_row = df if cu is None else df.abs().sum(0, keepdim=True)  # varlen: every sequence on row 0
        final = torch.einsum("bjhp,bjhn,bhpn->bhj", k64["x"].abs(), Bh.abs(), per_row.abs()).mul(
            torch.exp(cs[..., -1:] - cs) * dtp)  # (b, h, j): pairs with the final-state gradient
        init = torch.zeros_like(dtp)  # (b, h, i): pairs with the initial state
        if "initial_states" in k64:
            s0 = k64["initial_states"]
            s0 = s0 if cu is None else s0.abs().sum(0, keepdim=True)
            init = torch.einsum("bihp,bihn,bhpn->bhi", dy.abs(), Ch.abs(), s0.abs()).mul(torch.exp(cs))
        if opts["extreme"] == "decay80":
            size = pairs.sum((-1, -2)) + final.sum(-1) + init.sum(-1)  # (b, h)
            allowance = 2.0 ** -11 * 8 * (dtp.sum(-1) * size).sum(0)  # (h,)
        else:
            between = (spans[..., :, None] - spans[..., None, :]).clamp_min(0.0)  # (b, h, i, j): (j, i]
            terms = ((pairs * between).sum((-1, -2)) + (final * (spans[..., -1:] - spans)).sum(-1)
                     + (init * spans).sum(-1))
            allowance = 2.0 ** -11 * terms.sum(0)
        return {"A": allowance.to(device)}

    out = Outcome()
    worst = max([dtype, opts["state_dtype"] or torch.float32], key=lambda d: TOL[d])
    differential(out, lambda **k: flashssm.ssd_scan(**k, state_dtype=opts["state_dtype"], return_final_states=True,
                                                    **options),
                 lambda **k: ssd_ref.ssd_scan_chunked(**k, **options), kw, g, device,
                 outputs=["y", "final_states"], backprop=["y", "final_states"], grads=opts["grads"],
                 tol=TOL[worst] * (4 if opts["extreme"] == "decay80" else 1), also_reduced={"dt"},
                 zero_scale=zero_scale,
                 # (fp32 inputs with 16-bit states too: case 914317495, bf16 states, dt_tiny, dt_bias on the clamp,
                 # dA of 2.5e-4 off by 7.8e-5 where the allowance's terms were 0.2: 2^-11.4 of them)
                 cancellation=decay_cancellation if worst != torch.float32 else None)
    repeated_call(out, lambda: flashssm.ssd_scan(**kw, state_dtype=opts["state_dtype"],
                                                   return_final_states=True, **options), ["y", "final_states"])
    if opts["grads"]:
        repeated_training_call(out, lambda **k: flashssm.ssd_scan(**k, state_dtype=opts["state_dtype"],
                                                                  return_final_states=True, **options), kw, g, device)
    packed_nan_stays(out, lambda **k: flashssm.ssd_scan(**k, state_dtype=opts["state_dtype"], return_final_states=True,
                                                        **options), kw, cu, ("x", "dt", "B", "C", "z"), 1,
                     opts["grads"], g)
    return desc, out


# ---- selective_scan ----

def scan_shape(rng: random.Random, shapes: str, device) -> tuple:
    """(dtype, dim, dstate, ngroups, batch, seqlen, lens, cu, heavy) of a selective_scan case. "small": the
    interpreter's odd shapes. "model": shapes that take each of the forward's and backward's plans on the GPU
    (`scan.forward_config`): batch 1-2 of long sequences (early-publish segments), grids of one to four waves (late
    hand-over segments), dstate 64-256, plain grids; `heavy` where the float64 reference's autograd through every token
    would take tens of GB (gradients drawn less often there)."""
    if shapes == "small":
        dtype = rng.choice(input_dtypes(device.type == "cuda"))
        dim = rng.choice([1, 3, 8, 16, 37])
        dstate = rng.choice([1, 4, 16, 23])
        grouped = rng.random() < 0.4
        ngroups = rng.choice([d for d in (1, 2, 3) if dim % d == 0]) if grouped else None
        batch, seqlen, lens, cu = packing(rng, 80, lambda: (rng.randint(1, 2), seqlen_near(rng, 32, 100)))
        return dtype, dim, dstate, ngroups, batch, seqlen, lens, cu, False
    dtype = rng.choice(MODEL_DTYPES)
    regime = rng.choice(["segments", "late", "wide", "plain"])
    heavy = False
    if regime == "segments":
        batch, dim, dstate, longest = rng.randint(1, 2), rng.choice([256, 512, 1536]), rng.choice([16, 16, 4]), 6144
        seqlen = rng.randint(2048, longest)
    elif regime == "late":  # one-warp programs of 16 channels: 0.8 to 4 waves of them
        batch, dim, dstate, longest = rng.choice([(4, 5120), (8, 2560), (6, 4096), (7, 3072)]) + (16, 2600)
        seqlen, heavy = rng.randint(2048, longest), True
    elif regime == "wide":
        batch, dim, dstate, longest = rng.randint(1, 2), rng.choice([64, 256, 512]), rng.choice([64, 128, 256]), 3000
        seqlen = rng.choice([1, 33, rng.randint(100, longest)])
    else:
        batch, dim, dstate, longest = rng.randint(2, 4), rng.choice([1024, 1536]), 16, 1500
        seqlen = rng.choice([1, 7, rng.randint(64, longest)])
    ngroups = rng.choice([d for d in (1, 2, 4) if dim % d == 0]) if rng.random() < 0.3 else None
    if rng.random() < 0.3:  # packed: up to four sequences, empty and single-token ones among them
        return (dtype, dim, dstate, ngroups, *packed(model_lengths(rng, rng.randint(2, 4), longest)), heavy)
    return dtype, dim, dstate, ngroups, batch, seqlen, None, None, heavy


def case_selective_scan(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, dim, dstate, ngroups, batch, seqlen, lens, cu, heavy = scan_shape(rng, shapes, device)
    opts = dict(D=rng.random() < 0.5, z=rng.random() < 0.5, delta_bias=rng.random() < 0.5,
                delta_softplus=rng.random() < 0.5, last_state=rng.random() < 0.5,
                extreme=rng.choice(["none", "none", "dt_tiny", "decay80", "zero_bc"]),
                strided=rng.random() < (0.5 if shapes == "model" else 0.3),
                grads=rng.random() < (0.2 if heavy else 0.5))
    desc = dict(op="selective_scan", dtype=str(dtype), batch=batch, dim=dim, seqlen=seqlen, lens=lens, dstate=dstate,
                ngroups=ngroups, **{k: str(v) for k, v in opts.items()})
    bc = (batch, dstate, seqlen) if ngroups is None else (batch, ngroups, dstate, seqlen)
    A = -torch.exp(rand(g, dim, dstate) * 2.5)
    kw = dict(u=randn(g, batch, dim, seqlen, dtype=dtype), A=A, B=randn(g, *bc, dtype=dtype),
              C=randn(g, *bc, dtype=dtype))
    delta = rates(g, (batch, dim, seqlen), opts["delta_softplus"])
    if opts["extreme"] == "dt_tiny":
        delta = torch.full_like(delta, -14.0 if opts["delta_softplus"] else 1e-6)
    elif opts["extreme"] == "decay80":
        opts["delta_softplus"], opts["delta_bias"] = False, False
        desc.update(delta_softplus="False", delta_bias="False")
        hit = rand(g, batch, 1, seqlen) < 0.2
        # the fastest-decaying state at exp(-80)
        delta = torch.where(hit, 80.0 / A.abs().max(), rates(g, (batch, dim, seqlen), False))
    elif opts["extreme"] == "zero_bc":
        mask = rand(g, seqlen) < 0.3
        kw["B"][..., mask] = 0
        kw["C"][..., mask] = 0
    kw["delta"] = delta.to(dtype)
    if opts["D"]:
        kw["D"] = randn(g, dim)
    if opts["z"]:
        kw["z"] = randn(g, batch, dim, seqlen, dtype=dtype)
    if opts["delta_bias"]:  # without softplus, delta + bias stays >= 0 (Mamba's domain: decays <= 1)
        kw["delta_bias"] = randn(g, dim) * 0.5 if opts["delta_softplus"] else rand(g, dim) * 0.5
    for k in list(kw):
        kw[k] = place(kw[k], device, opts["strided"] and kw[k].dim() >= 3, rng)
    options = dict(delta_softplus=opts["delta_softplus"], return_last_state=opts["last_state"],
                   cu_seqlens=None if cu is None else cu.to(device))
    out = Outcome()
    differential(out, lambda **k: flashssm.selective_scan(**k, **options),
                 lambda **k: scan_ref.selective_scan_reference(**k, **options), kw, g, device,
                 outputs=["out", "last_state"], backprop=["out", "last_state"] if opts["last_state"] else ["out"],
                 grads=opts["grads"],
                 tol=TOL[dtype] * (4 if opts["extreme"] == "decay80" else 1), also_reduced={"delta"})
    repeated_call(out, lambda: flashssm.selective_scan(**kw, **options), ["out", "last_state"])
    if opts["grads"]:
        repeated_training_call(out, lambda **k: flashssm.selective_scan(**k, **options), kw, g, device)
    packed_nan_stays(out, lambda **k: flashssm.selective_scan(**k, **options), kw, cu, ("u", "delta", "B", "C", "z"),
                     -1, opts["grads"], g)
    return desc, out


# ---- decoding steps ----

# The decoding steps' model shapes keep the state (and its float64 copies) under this many elements
STEP_STATE = 5e7


def step_shape(rng: random.Random, shapes: str, device) -> tuple:
    """(dtype, state_dtype, ngroups, nheads, headdim, dstate, batch) of an ssd_step case. "model": Mamba-2's heads
    (24-128 of 64 or 128, dstate 64-256, 1 or 8 groups) at decoding batches 1-64, where the program's rows of headdim
    shrink for small batches (`step.pick_block_p`)."""
    if shapes == "small":
        dtype = rng.choice(input_dtypes(device.type == "cuda"))
        state_dtype = rng.choice([torch.float32, torch.float16] + ([torch.bfloat16] if device.type == "cuda" else []))
        ngroups = rng.choice([1, 2])
        nheads = ngroups * rng.choice([1, 3])
        headdim, dstate = rng.choice([4, 16, 33, 64]), rng.choice([1, 16, 17, 64])
        return dtype, state_dtype, ngroups, nheads, headdim, dstate, rng.randint(1, 5)
    dtype = rng.choice(MODEL_DTYPES)
    state_dtype = rng.choice([torch.float32, torch.float32, torch.float16, torch.bfloat16])
    ngroups, nheads = rng.choice([1, 1, 8]), rng.choice([24, 48, 80, 128])
    headdim, dstate = rng.choice([64, 64, 128]), rng.choice([64, 128, 128, 256])
    batch = min(rng.choice([1, 2, 7, 16, 33, 64]), max(1, int(STEP_STATE // (nheads * headdim * dstate))))
    return dtype, state_dtype, ngroups, nheads, headdim, dstate, batch


def case_ssd_step(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, state_dtype, ngroups, nheads, headdim, dstate, batch = step_shape(rng, shapes, device)
    indexed = rng.random() < 0.4
    cache = batch + (rng.randint(0, 3) if indexed else 0)
    opts = dict(D=rng.choice([None, "h", "hp"]), z=rng.random() < 0.5, dt_bias=rng.random() < 0.5,
                dt_softplus=rng.random() < 0.5, dt_limit=rng.random() < 0.3, indexed=indexed)
    desc = dict(op="ssd_step", dtype=str(dtype), state_dtype=str(state_dtype), batch=batch, cache=cache, nheads=nheads,
                ngroups=ngroups, headdim=headdim, dstate=dstate, **{k: str(v) for k, v in opts.items()})
    state = randn(g, cache, nheads, headdim, dstate).to(state_dtype)
    kw = dict(x=randn(g, batch, nheads, headdim, dtype=dtype), A=-torch.exp(rand(g, nheads) * 2.5),
              B=randn(g, batch, ngroups, dstate, dtype=dtype), C=randn(g, batch, ngroups, dstate, dtype=dtype))
    kw["dt"] = rates(g, (batch, nheads), opts["dt_softplus"])
    if opts["D"] == "h":
        kw["D"] = randn(g, nheads)
    elif opts["D"] == "hp":
        kw["D"] = randn(g, nheads, headdim)
    if opts["z"]:
        kw["z"] = randn(g, batch, nheads, headdim, dtype=dtype)
    if opts["dt_bias"]:
        kw["dt_bias"] = randn(g, nheads) * 0.5
    if indexed:
        rows = list(range(cache))
        rng.shuffle(rows)
        idx = torch.tensor(rows[:batch], dtype=torch.int64)
        if batch > 1 and rng.random() < 0.5:
            idx[rng.randrange(batch)] = -1  # a padding row
        kw["state_batch_indices"] = idx
    extra = dict(dt_softplus=opts["dt_softplus"])
    if opts["dt_limit"]:
        extra["dt_limit"] = (1e-3, 0.5)
    out = Outcome()
    step_check(out, flashssm.ssd_step, ssd_ref.ssd_step_reference, state, {k: v.to(device) for k, v in kw.items()},
               extra, device, max(TOL[dtype], TOL[state_dtype]))
    return desc, out


def scan_step_shape(rng: random.Random, shapes: str, device) -> tuple:
    """(dtype, state_dtype, dim, dstate, batch, ngroups) of a selective_scan_step case. "model": Mamba-1's channels
    (1536-5120, and one width no block divides) at dstate 16-256 and decoding batches 1-128, where the program's
    channels shrink for small batches (`step.pick_block_d`)."""
    if shapes == "small":
        dtype = rng.choice(input_dtypes(device.type == "cuda"))
        state_dtype = rng.choice([torch.float32, torch.float16])
        dim, dstate = rng.choice([1, 8, 37, 64]), rng.choice([1, 4, 16, 23])
        batch = rng.randint(1, 5)
        return dtype, state_dtype, dim, dstate, batch, rng.choice([None] + [d for d in (1, 2) if dim % d == 0])
    dtype = rng.choice(MODEL_DTYPES)
    state_dtype = rng.choice([torch.float32, torch.float32, torch.float16])
    dim, dstate = rng.choice([1536, 2048, 3072, 5120, 5144]), rng.choice([16, 16, 64, 128, 256])
    batch = min(rng.choice([1, 2, 7, 16, 64, 128]), max(1, int(STEP_STATE // (dim * dstate))))
    ngroups = rng.choice([d for d in (1, 2, 4) if dim % d == 0]) if rng.random() < 0.3 else None
    return dtype, state_dtype, dim, dstate, batch, ngroups


def case_selective_scan_step(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, state_dtype, dim, dstate, batch, ngroups = scan_step_shape(rng, shapes, device)
    opts = dict(D=rng.random() < 0.5, z=rng.random() < 0.5, delta_bias=rng.random() < 0.5,
                delta_softplus=rng.random() < 0.5)
    desc = dict(op="selective_scan_step", dtype=str(dtype), state_dtype=str(state_dtype), batch=batch, dim=dim,
                dstate=dstate, ngroups=ngroups, **{k: str(v) for k, v in opts.items()})
    bc = (batch, dstate) if ngroups is None else (batch, ngroups, dstate)
    state = randn(g, batch, dim, dstate).to(state_dtype)
    kw = dict(u=randn(g, batch, dim, dtype=dtype), A=-torch.exp(rand(g, dim, dstate) * 2.5),
              B=randn(g, *bc, dtype=dtype), C=randn(g, *bc, dtype=dtype))
    kw["delta"] = rates(g, (batch, dim), opts["delta_softplus"]).to(dtype)
    if opts["D"]:
        kw["D"] = randn(g, dim)
    if opts["z"]:
        kw["z"] = randn(g, batch, dim, dtype=dtype)
    if opts["delta_bias"]:
        kw["delta_bias"] = randn(g, dim) * 0.5 if opts["delta_softplus"] else rand(g, dim) * 0.5
    out = Outcome()
    step_check(out, flashssm.selective_scan_step, scan_ref.selective_scan_step_reference, state,
               {k: v.to(device) for k, v in kw.items()}, dict(delta_softplus=opts["delta_softplus"]), device,
               max(TOL[dtype], TOL[state_dtype]))
    return desc, out


# ---- conv1d and the gated norm ----

def conv_shape(rng: random.Random, shapes: str, device) -> tuple:
    """(dtype, dim, width, batch, seqlen, lens, cu) of a causal_conv1d case. "model": the convolutions of Mamba-2's
    (d_inner + 2 ngroups dstate: 1792-7168 channels) and Mamba-1's mixers, width 4 mostly, 1 to 4096 tokens, packed
    batches with empty and single-token sequences: many channel blocks (128 a block where the channels are contiguous,
    the mixers' layout) and the backward's token splits over the GPU's SMs."""
    if shapes == "small":
        dtype = rng.choice(input_dtypes(device.type == "cuda"))
        dim, width = rng.choice([1, 5, 16, 48]), rng.randint(2, 4)
        return (dtype, dim, width, *packing(rng, 50, lambda: (rng.randint(1, 3),
                                                                 rng.choice([1, 2, width, rng.randint(1, 90)]))))
    dtype = rng.choice(MODEL_DTYPES)
    dim, width = rng.choice([1792, 3072, 5120, 5376, 7168]), rng.choice([4, 4, 4, 2, 3])
    longest = 4096 if dim < 5000 else 2048
    if rng.random() < 0.3:
        return (dtype, dim, width, *packed(model_lengths(rng, rng.randint(2, 4), longest)))
    return (dtype, dim, width, rng.randint(1, 4), rng.choice([1, width - 1, width, 255, rng.randint(256, longest)]),
            None, None)


def case_causal_conv1d(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, dim, width, batch, seqlen, lens, cu = conv_shape(rng, shapes, device)
    num_seqs = len(lens) if lens else batch
    opts = dict(bias=rng.random() < 0.5, silu=rng.random() < 0.5, init=rng.random() < 0.4,
                final=rng.random() < 0.4, channels_last=rng.random() < (0.4 if shapes == "small" else 0.7),
                grads=rng.random() < 0.6)
    desc = dict(op="causal_conv1d", dtype=str(dtype), batch=batch, dim=dim, seqlen=seqlen, lens=lens, width=width,
                **{k: str(v) for k, v in opts.items()})
    x = randn(g, batch, dim, seqlen, dtype=dtype)
    if opts["channels_last"]:
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    kw = dict(x=x, weight=randn(g, dim, width, dtype=dtype))
    if opts["bias"]:
        kw["bias"] = randn(g, dim, dtype=dtype)
    if opts["init"]:
        kw["initial_states"] = randn(g, num_seqs, dim, width - 1, dtype=dtype)
    kw = {k: v.to(device) for k, v in kw.items()}
    options = dict(activation="silu" if opts["silu"] else None, return_final_states=opts["final"],
                   cu_seqlens=None if cu is None else cu.to(device))
    out = Outcome()
    differential(out, lambda **k: flashssm.causal_conv1d(**k, **options),
                 lambda **k: conv_ref.causal_conv1d_reference(**k, **options), kw, g, device,
                 outputs=["out", "final_states"], backprop=["out", "final_states"] if opts["final"] else ["out"],
                 grads=opts["grads"], tol=TOL[dtype])
    repeated_call(out, lambda: flashssm.causal_conv1d(**kw, **options), ["out", "final_states"])
    packed_nan_stays(out, lambda **k: flashssm.causal_conv1d(**k, **options), kw, cu, ("x",), -1, opts["grads"], g)
    return desc, out


def norm_shape(rng: random.Random, shapes: str, device) -> tuple:
    """(dtype, groups, dim, rows) of an rmsnorm_gated case. "model": the mixers' gated norms (d_inner 1536-10240 in 1,
    2 or 8 groups): groups past `rmsnorm.WIDE_GROUP` (the two-sweep backward) and past 8192 (two rows a program), over
    a decoding step's rows or up to 4 x 2048 tokens."""
    if shapes == "small":
        dtype = rng.choice(input_dtypes(device.type == "cuda"))
        groups = rng.choice([1, 1, 2, 4])
        # (groups of one element are left out: their gradient eps / (x^2 + eps)^1.5 is a cancellation
        # that fp32 cannot resolve to the tolerance, in any implementation)
        dim = groups * rng.choice([3, 16, 40, 128])
        return dtype, groups, dim, rng.choice([(1,), (3,), (2, 5), (rng.randint(1, 40),)])
    dtype = rng.choice(MODEL_DTYPES)
    dim, groups = rng.choice([(5120, 1), (5120, 8), (1536, 1), (2560, 1), (4096, 1), (4096, 8), (8192, 1), (10240, 1),
                              (10240, 2)])
    rows = rng.choice([(1,), (rng.randint(2, 64), 1), (1, rng.randint(1, 4096)),
                       (rng.randint(2, 4), rng.randint(100, 2048))])
    return dtype, groups, dim, rows


def case_rmsnorm_gated(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, groups, dim, rows = norm_shape(rng, shapes, device)
    opts = dict(z=rng.random() < 0.6, before=rng.random() < 0.5, zero_rows=rng.random() < 0.2,
                grads=rng.random() < 0.6)
    # y in another dtype now and then (a model's norm under autocast writes autocast's; drawn last: earlier draws keep
    # their seeds' values)
    opts["out_dtype"] = rng.choice([None, None, None, *input_dtypes(device.type == "cuda")])
    desc = dict(op="rmsnorm_gated", dtype=str(dtype), rows=rows, dim=dim, groups=groups,
                **{k: str(v) for k, v in opts.items()})
    x = randn(g, *rows, dim, dtype=dtype)
    if opts["zero_rows"]:
        x[..., 0, :] = 0
    kw = dict(x=x, weight=randn(g, dim, dtype=dtype))
    if opts["z"]:
        kw["z"] = randn(g, *rows, dim, dtype=dtype)
    kw = {k: v.to(device) for k, v in kw.items()}
    options = dict(eps=1e-5, group_size=dim // groups, norm_before_gate=opts["before"])
    out = Outcome()
    out_dtype = opts["out_dtype"]
    tol = TOL[dtype] if out_dtype is None else max(TOL[dtype], TOL[out_dtype])
    differential(out, lambda **k: flashssm.rmsnorm_gated(**k, **options, out_dtype=out_dtype),
                 lambda **k: norm_ref.rmsnorm_gated_reference(**k, **options), kw, g, device,
                 outputs=["y"], backprop=["y"], grads=opts["grads"], tol=tol)
    repeated_call(out, lambda: flashssm.rmsnorm_gated(**kw, **options, out_dtype=out_dtype), ["y"])
    return desc, out


def case_add_rmsnorm(seed: int, device, shapes: str = "small") -> tuple[dict, Outcome]:
    """add_rmsnorm (a block's residual add inside its RMSNorm) against the float64 add and norm: y and the sum s, and
    the gradients of hidden, residual and weight for incoming gradients of y, and of s now and then (a later block's
    use of the stream). The widths of `norm_shape` (its groups unused: the norm spans the row); the residual in the
    input's dtype or fp32, the weight likewise; the sum's and y's dtypes drawn."""
    rng = random.Random(seed)
    g = _gen(seed)
    dtype, _, dim, rows = norm_shape(rng, shapes, device)
    dtypes = input_dtypes(device.type == "cuda")
    opts = dict(residual_in=rng.choice([dtype, torch.float32]), weight=rng.choice([dtype, torch.float32]),
                residual_dtype=rng.choice([None, None, torch.float32, *dtypes]),
                out_dtype=rng.choice([None, None, *dtypes]), ds=rng.random() < 0.6, grads=rng.random() < 0.7)
    desc = dict(op="add_rmsnorm", dtype=str(dtype), rows=rows, dim=dim, **{k: str(v) for k, v in opts.items()})
    kw = dict(hidden=randn(g, *rows, dim, dtype=dtype), residual=randn(g, *rows, dim, dtype=opts["residual_in"]),
              weight=(1 + 0.3 * randn(g, dim)).to(opts["weight"]))
    kw = {k: v.to(device) for k, v in kw.items()}
    stored = opts["residual_dtype"] or torch.promote_types(dtype, opts["residual_in"])
    tol = max(TOL[t] for t in (dtype, opts["residual_in"], stored, opts["out_dtype"] or stored))
    options = dict(eps=1e-5, residual_dtype=opts["residual_dtype"], out_dtype=opts["out_dtype"])

    def reference(hidden, residual, weight):
        s = hidden + residual
        return norm_ref.rmsnorm_gated_reference(s, weight, eps=1e-5, group_size=dim), s

    out = Outcome()
    differential(out, lambda **k: add_rmsnorm(**k, **options), reference, kw, g, device, outputs=["y", "s"],
                 backprop=["y", "s"] if opts["ds"] else ["y"], grads=opts["grads"], tol=tol)
    return desc, out


CASES = {
    "ssd_scan": case_ssd_scan,
    "selective_scan": case_selective_scan,
    "ssd_step": case_ssd_step,
    "selective_scan_step": case_selective_scan_step,
    "causal_conv1d": case_causal_conv1d,
    "rmsnorm_gated": case_rmsnorm_gated,
    "add_rmsnorm": case_add_rmsnorm,
}


def case_seed(seed: int, index: int) -> int:
    return random.Random(f"{seed}:{index}").getrandbits(32)


def reproducer(op: str, seed: int, device, shapes: str = "small") -> str:
    prefix = "" if device.type == "cuda" else "TRITON_INTERPRET=1 "
    profile = "" if shapes == "small" else f" --shapes {shapes}"
    return f"{prefix}python -m tests.fuzz.fuzz --op {op} --case {seed}{profile}"


def run_case(op: str, seed: int, device, shapes: str = "small") -> tuple[dict, list[str]]:
    """One case; its failures (an exception is one). `shapes`: "small" or "model" (every op has both profiles)."""
    try:
        desc, out = CASES[op](seed, device, shapes)
    except Exception as err:  # a crash inside the op is a finding, not the end of the run
        return {"op": op}, [f"raised {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                            f" at {traceback.extract_tb(err.__traceback__)[-1].name}"]
    return desc, out.failures


def new_report(ops: list[str]) -> dict:
    return {"cases": 0, "failed": [], "per_op": {op: 0 for op in ops}}


def fuzz(seed: int, budget_s: float, ops: list[str], device, max_cases: int | None = None, log=print,
         verbose: bool = False, shapes: str = "small", report: dict | None = None) -> dict:
    """Cases round-robin over `ops` until `budget_s` seconds (or max_cases) are spent; returns
    {"cases": n, "failed": [(op, case seed, description, failures)], "per_op": {op: n}}, filled in as the cases finish
    (`report`: a `new_report` to fill, so that a caller stopped midway still holds what was done). verbose: a line for
    every case that passes too, with its time and description (on a GPU a case's first compiles can take a minute).
    shapes: "small" or "model" (`run_case`). The budget is checked between cases: the last case may end past it."""
    start = time.monotonic()
    report = new_report(ops) if report is None else report
    index = 0
    while time.monotonic() - start < budget_s and (max_cases is None or index < max_cases):
        op = ops[index % len(ops)]
        cs = case_seed(seed, index)
        began = time.monotonic()
        desc, failures = run_case(op, cs, device, shapes)
        report["cases"] += 1
        report["per_op"][op] += 1
        if failures:
            report["failed"].append((op, cs, desc, failures))
            log(f"FAIL {op} case {cs}: {'; '.join(failures)}  |  {desc}  |  "
                f"replay: {reproducer(op, cs, device, shapes)}")
        elif verbose:
            log(f"ok {op} case {cs} ({time.monotonic() - began:.1f} s)  |  {desc}")
        index += 1
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds")
    parser.add_argument("--max-cases", type=int, default=None)
    parser.add_argument("--verbose", action="store_true", help="a line for every case, passed ones too")
    parser.add_argument("--ops", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--op", help="with --case: replay one case")
    parser.add_argument("--case", type=int, help="a case seed from a failure line")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--shapes", choices=("small", "model"), default="small",
                        help="small: odd shapes (the interpreter's); model: the shapes models run, on the GPU's fast "
                             "paths (GPU only)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if args.shapes == "model" and device.type != "cuda":
        parser.error("--shapes model needs a GPU (its shapes take minutes a case under the interpreter)")
    if args.case is not None:
        if args.op not in CASES:
            parser.error(f"--case needs --op, one of {', '.join(CASES)} (got {args.op!r})")
        desc, failures = run_case(args.op, args.case, device, args.shapes)
        print(desc)
        print("\n".join(failures) if failures else "ok")
        return 1 if failures else 0
    ops = [o for o in args.ops.split(",") if o]
    for o in ops:
        if o not in CASES:
            parser.error(f"--ops: unknown op {o!r}; expected some of {', '.join(CASES)}")
    print(f"fuzz seed {args.seed}, budget {args.budget:.0f} s, device {device}, ops {', '.join(ops)}, "
          f"shapes {args.shapes}", flush=True)
    report = new_report(ops)
    stopped = None
    previous = signal.signal(signal.SIGTERM, _stop)  # (`timeout` sends it: the summary below still prints)
    try:
        fuzz(args.seed, args.budget, ops, device, args.max_cases, log=lambda s: print(s, flush=True),
             verbose=args.verbose, shapes=args.shapes, report=report)
    except (Stopped, KeyboardInterrupt) as err:
        stopped = str(err) or "an interrupt"
    finally:
        signal.signal(signal.SIGTERM, previous)
    per_op = ", ".join(f"{k} {v}" for k, v in report["per_op"].items())
    if stopped:
        print(f"stopped by {stopped} during case {report['cases'] + 1}: the counts below are the cases finished",
              flush=True)
    print(f"{report['cases']} cases ({per_op}), {len(report['failed'])} failed", flush=True)
    return 1 if report["failed"] else STOPPED_RC if stopped else 0


STOPPED_RC = 124  # (as `timeout` exits: a run stopped before its budget is not a pass)


class Stopped(BaseException):
    """SIGTERM during a run (`timeout`, a job's limit). A BaseException, as KeyboardInterrupt is: `run_case` takes an
    Exception inside an op for a finding of that case."""


def _stop(signum, frame):
    raise Stopped(signal.Signals(signum).name)


if __name__ == "__main__":
    sys.exit(main())
