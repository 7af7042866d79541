"""Why the fuzzer's bf16 ssd_scan cases with dt*A = -80 fail on dA (issue 9's open finding).

    PYTHONPATH=. python3 benchmarks/analyze_decay80.py [CASE_SEED ...]    (on the GPU)

For each case: the kernel's dA against the float64 reference's on the same inputs; the same
kernel on fp32 copies of the bf16 values and with fp32 states (which rounding is responsible);
and how well conditioned dA is: dA = sum over tokens of dt_t * G_t, with G_t the gradient of
the loss by the token's decay exponent a_t = dt_t * A, from a float64 step-by-step reference
that takes a_t as its own input. sum |dt_t G_t| / |dA| is the factor by which rounding in the
terms is amplified in the sum; bf16's unit roundoff (2^-8) times it is the error to expect from
16-bit rounding alone.
"""

from __future__ import annotations

import sys

import torch

sys.path.insert(0, ".")
from tests.fuzz import fuzz as F  # noqa: E402

import flashssm  # noqa: E402


def capture(seed: int, device):
    """The case's inputs, options and incoming gradients, by watching the fuzz harness run it."""
    seen = {}
    differential, grads_of = F.differential, F.grads_of

    def spy_differential(out, fn, ref_fn, kw, g, device, **kwargs):
        seen.update(fn=fn, kw=kw)
        return differential(out, fn, ref_fn, kw, g, device, **kwargs)

    def spy_grads_of(outputs, grads_in, kw, names):
        seen.setdefault("incoming", [t.clone() for t in grads_in])
        return grads_of(outputs, grads_in, kw, names)

    F.differential, F.grads_of = spy_differential, spy_grads_of
    try:
        desc, out = F.case_ssd_scan(seed, device)
    finally:
        F.differential, F.grads_of = differential, grads_of
    return desc, out, seen


def sequential(x, dt, a, B, C, D, z, init):
    """float64 step-by-step SSD with the decay exponent a (batch, seqlen, heads) as its own input."""
    b, l, h, p = x.shape
    g, n = B.shape[2], B.shape[3]
    r = h // g
    state = init.clone() if init is not None else x.new_zeros(b, h, p, n)
    ys = []
    for t in range(l):
        Bt = B[:, t].repeat_interleave(r, dim=1)  # (b, h, n)
        Ct = C[:, t].repeat_interleave(r, dim=1)
        state = torch.exp(a[:, t])[..., None, None] * state + (dt[:, t, :, None] * x[:, t])[..., None] * Bt[:, :, None]
        ys.append((state * Ct[:, :, None]).sum(-1))
    y = torch.stack(ys, 1)
    if D is not None:
        y = y + (D if D.dim() == 2 else D[:, None]) * x
    if z is not None:
        y = y * z * torch.sigmoid(z)
    return y, state


def dA_of(fn, kw, incoming):
    leaves = {k: (v.detach().clone().requires_grad_() if k == "A" else v) for k, v in kw.items()}
    y, final = fn(**leaves)
    torch.autograd.backward([y, final], [incoming[0].to(y.dtype), incoming[1].to(final.dtype)])
    return leaves["A"].grad.double()


def analyse(seed: int, device):
    desc, out, seen = capture(seed, device)
    print(f"case {seed}: {desc}")
    print(f"  fuzz verdict: {'; '.join(out.failures) or 'ok'}")
    kw, fn, incoming = seen["kw"], seen["fn"], seen["incoming"]
    k64 = {k: v.detach().double() for k, v in kw.items()}
    a = (k64["dt"] * k64["A"]).requires_grad_()
    y, final = sequential(k64["x"], k64["dt"], a, k64["B"], k64["C"], k64.get("D"), k64.get("z"),
                          k64.get("initial_states"))
    torch.autograd.backward([y, final], [incoming[0].double(), incoming[1].double()])
    terms = k64["dt"] * a.grad  # (batch, seqlen, heads): dA's terms
    dA_ref = terms.sum((0, 1))
    spread = terms.abs().sum((0, 1))
    print(f"  reference dA {dA_ref.tolist()}, sum |terms| {spread.tolist()}, "
          f"amplification {(spread / dA_ref.abs()).tolist()}")
    variants = {"as drawn": kw,
                "fp32 copies": {k: (v.float() if v.is_floating_point() else v) for k, v in kw.items()}}
    for name, inputs in variants.items():
        dA = dA_of(fn, inputs, incoming)
        err = (dA - dA_ref).abs()
        print(f"  kernel dA ({name}) {dA.tolist()}: abs err {err.tolist()}, relative {(err / dA_ref.abs()).tolist()}, "
              f"in units of 2^-8 sum|terms|: {(err / (2 ** -8 * spread)).tolist()}")
    if desc.get("state_dtype") not in (None, "None"):
        fp32_state = lambda **k: flashssm.ssd_scan(**k, return_final_states=True, chunk_size=desc["chunk"])  # noqa: E731
        dA = dA_of(fp32_state, kw, incoming)
        err = (dA - dA_ref).abs()
        print(f"  kernel dA (fp32 states) relative err {(err / dA_ref.abs()).tolist()}")


def time_backward(label: str):
    """ssd_scan forward + backward on the 2.7B shape, bf16, 8x4K (the bench's training workload)."""
    import triton

    from flashssm.bench.workloads import SSDTrainWorkload

    w = SSDTrainWorkload("8x4K", 8, 4096)
    inp = w.make_inputs("cuda", seed=0)
    leaves = [inp[k].requires_grad_() for k in ("x", "dt", "A", "B", "C")]

    def step():
        y = flashssm.ssd_scan(*leaves, chunk_size=256)
        torch.autograd.grad(y, leaves, inp["dy"])

    ms = triton.testing.do_bench(step, warmup=50, rep=300)
    ref = w.reference(inp)
    y = flashssm.ssd_scan(*leaves, chunk_size=256)
    grads = torch.autograd.grad(y, leaves, inp["dy"])
    errs = ", ".join(f"{n} {float((g.double() - r).norm() / r.norm()):.2e}"
                     for n, g, r in zip(("dx", "ddt", "dA", "dB", "dC"), grads, ref[1:]))
    print(f"  {label}: 8x4K forward + backward {ms:.3f} ms; gradient errors {errs}", flush=True)


if __name__ == "__main__":
    device = torch.device("cuda")
    seeds = [int(a) for a in sys.argv[1:] if a.isdigit()] or [2644625069, 1567911212]
    for s in seeds:
        analyse(s, device)
    if "--tf32x3" in sys.argv:  # the backward's products of computed values in 3-pass tf32 (~fp32)
        time_backward("tf32 (as shipped)")
        import flashssm.ops.ssd.backward as bwd

        bwd._dot_precision = lambda dtype: "ieee" if dtype == torch.float64 else "tf32x3"
        print("with tf32x3 in the backward:")
        for s in seeds:
            analyse(s, device)
        time_backward("tf32x3")
