"""Every op's gradients with its incoming gradients in the layouts autograd hands over, at the GPU's real shapes.

    PYTHONPATH=. python3 benchmarks/check_incoming_layouts.py [--quick] [--op NAME ...]

For each op and shape, the incoming gradients (dy, and the last or final state's where the op returns one) are drawn
once in the output's dtype, then handed to the backward three ways: contiguous, with their last two axes transposed in
memory, and as one value expanded over every element (strides 0: the gradient of `out.sum()`, whose contiguous copy is
the same values). Every layout must give the contiguous run's gradients within a bf16 ulp of the largest value (with
float atomics, or where the layout picks another specialisation of the kernel: the selective scan's backward reads dy
by its strides and specialises on their alignment, so under the deterministic mode its bits move by rounding); where
the bits are the same it says so. The shapes take the paths a model's training takes: the SSD backward in
sweeps (1 x 2K) and in tiles (2 x 4K), the selective scan at the 2.8B width in one piece and in segments, the conv1d
and the gated norm at the 2.7B mixer's widths. A wrong read shows as a mismatch, a NaN or a fault.
"""

import argparse

import torch

import flashssm


def layouts(t: torch.Tensor) -> dict:
    value = t.flatten()[:1].reshape((1,) * t.dim())
    return {"contiguous": t.contiguous(), "transposed": t.transpose(-1, -2).contiguous().transpose(-1, -2),
            "expanded": value.expand(t.shape), "expanded-copy": value.expand(t.shape).contiguous()}


def cases(quick: bool):
    f = dict(device="cuda", dtype=torch.bfloat16)

    def ssd(batch, seqlen, heads=8):
        kw = dict(x=torch.randn(batch, seqlen, heads, 64, **f),
                  dt=torch.rand(batch, seqlen, heads, device="cuda") * 0.1,
                  A=-torch.rand(heads, device="cuda") - 0.5, B=torch.randn(batch, seqlen, 1, 128, **f),
                  C=torch.randn(batch, seqlen, 1, 128, **f), D=torch.randn(heads, device="cuda"),
                  dt_bias=torch.randn(heads, device="cuda") * 0.1)
        return (f"ssd_scan {batch}x{seqlen}", kw,
                lambda **k: flashssm.ssd_scan(**k, chunk_size=256, dt_softplus=True, return_final_states=True))

    def scan(batch, seqlen, dim=5120):
        kw = dict(u=torch.randn(batch, dim, seqlen, **f), delta=torch.randn(batch, dim, seqlen, **f) - 3.0,
                  A=-torch.exp(torch.rand(dim, 16, device="cuda")), B=torch.randn(batch, 16, seqlen, **f),
                  C=torch.randn(batch, 16, seqlen, **f), D=torch.randn(dim, device="cuda"),
                  z=torch.randn(batch, dim, seqlen, **f), delta_bias=torch.randn(dim, device="cuda") * 0.5)
        return (f"selective_scan {batch}x{seqlen} dim {dim}", kw,
                lambda **k: flashssm.selective_scan(**k, delta_softplus=True, return_last_state=True))

    out = [ssd(1, 2048), scan(2, 1024)]
    if not quick:
        out += [ssd(2, 4096), scan(1, 16384, 1536)]
    conv = dict(x=torch.randn(2, 5376, 1024, **f).transpose(1, 2).contiguous().transpose(1, 2),
                weight=torch.randn(5376, 4, **f), bias=torch.randn(5376, **f),
                initial_states=torch.randn(2, 5376, 3, **f))
    out.append(("causal_conv1d 2x1024", conv,
                lambda **k: flashssm.causal_conv1d(**k, activation="silu", return_final_states=True)))
    norm = dict(x=torch.randn(2, 1024, 5120, **f), weight=torch.randn(5120, **f), z=torch.randn(2, 1024, 5120, **f))
    out.append(("rmsnorm_gated 2x1024", norm, lambda **k: flashssm.rmsnorm_gated(**k, group_size=5120)))
    return out


def grads(fn, kw, incoming):
    leaves = {k: v.detach().clone().requires_grad_() for k, v in kw.items()}
    outs = fn(**leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    torch.autograd.backward(list(outs), list(incoming))
    return {k: v.grad for k, v in leaves.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the small shapes alone")
    ap.add_argument("--op", action="append", help="only the cases whose name starts with this")
    a = ap.parse_args()
    torch.manual_seed(0)
    bad = 0
    for name, kw, fn in cases(a.quick):
        if a.op and not any(name.startswith(op) for op in a.op):
            continue
        with torch.no_grad():
            outs = fn(**kw)
        outs = outs if isinstance(outs, tuple) else (outs,)
        drawn = [torch.randn_like(o) for o in outs]
        for deterministic in (True, False):
            torch.use_deterministic_algorithms(deterministic)
            try:
                ways = {}
                for which in ("contiguous", "transposed", "expanded", "expanded-copy"):
                    ways[which] = grads(fn, kw, [layouts(d)[which] for d in drawn])
            finally:
                torch.use_deterministic_algorithms(False)
            torch.cuda.synchronize()
            for which, base in (("transposed", "contiguous"), ("expanded", "expanded-copy")):
                worst, same = 0.0, True
                for k, g in ways[which].items():
                    ref = ways[base][k]
                    if not torch.isfinite(g).all() and torch.isfinite(ref).all():
                        worst = float("inf")
                    diff = float((g.double() - ref.double()).abs().max() / ref.double().abs().max().clamp_min(1e-30))
                    worst, same = max(worst, diff), same and torch.equal(g, ref)
                ok = worst <= 2 ** -7
                bad += not ok
                print(f"{name:<38} {'deterministic' if deterministic else 'atomics':<13} {which:<10} "
                      f"{'same bits' if same else f'max diff {worst:.2e} of the largest'} {'ok' if ok else 'BAD'}",
                      flush=True)
    print("all layouts agree" if not bad else f"{bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
