"""The norm kernels' layout switches at the shapes a 2.7B training step runs them, alternating in one process:
LOAD_VECTOR (elements a thread loads at once; 0: Triton's own choice), SPLIT_TILE (the one-tile backward's group
as two power-of-two tiles) and WIDE_GROUP (8192: the 5120-wide gated backward in one split tile instead of two
sweeps). Each variant's result is checked against the first's bits (a differing one is printed, not an error:
another layout sums in another order).

    PYTHONPATH=. python3 benchmarks/time_norm_tiles.py [--rounds 3] [--cases bwd] \
        [--variant LOAD_VECTOR=0,SPLIT_TILE=False --variant TILE_STAGES=2 ...]

A --variant sets the named `rmsnorm` switches (Python literals) for its column, the rest as they are; without any,
the sixty-seventh session's first six (LOAD_VECTOR / SPLIT_TILE / WIDE_GROUP).

Rows (32768 = 8 x 4K tokens): the block norm (2560 wide, the fp32 residual stream, y in bf16 for its Linear), the
same with the residual add inside (`add_rmsnorm`: bf16 hidden + fp32 residual), the same without autocast (all fp32
and all bf16), and the mixer's gated norm (5120 wide, bf16 x and z; its backward is the two-sweep kernel, which
LOAD_VECTOR leaves alone). Also the add and norm apart against `add_rmsnorm`, forward + backward.
"""

import argparse
import ast
import statistics

import torch
from triton.testing import do_bench

import flashssm
from flashssm.ops.norm import add_rmsnorm, rmsnorm

ROWS = 8 * 4096


def cases():
    f32, bf16 = torch.float32, torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(0)

    def t(width, dtype):
        return torch.randn(ROWS, width, device="cuda", generator=gen).to(dtype)

    w = torch.randn(2560, device="cuda", generator=gen)
    wg = torch.randn(5120, device="cuda", generator=gen)
    x32, xb, r32 = t(2560, f32), t(2560, bf16), t(2560, f32)
    dyb, dy32, ds32 = t(2560, bf16), t(2560, f32), t(2560, f32)
    gx, gz, gy = t(5120, bf16), t(5120, bf16), t(5120, bf16)
    out = {
        "block fwd x fp32 -> y bf16": lambda: rmsnorm.rmsnorm_forward(x32, w, None, 1e-5, 2560, False,
                                                                      out_dtype=bf16),
        "block bwd x fp32, dy bf16": lambda: rmsnorm.rmsnorm_backward(x32, w, None, dyb, 1e-5, 2560, False)[0],
        "block fwd all fp32": lambda: rmsnorm.rmsnorm_forward(x32, w, None, 1e-5, 2560, False),
        "block bwd all fp32": lambda: rmsnorm.rmsnorm_backward(x32, w, None, dy32, 1e-5, 2560, False)[0],
        "block fwd all bf16": lambda: rmsnorm.rmsnorm_forward(xb, w, None, 1e-5, 2560, False),
        "block bwd all bf16": lambda: rmsnorm.rmsnorm_backward(xb, w, None, dyb, 1e-5, 2560, False)[0],
        "add fwd bf16 + fp32 -> y bf16, s fp32": lambda: rmsnorm.rmsnorm_forward(
            xb, w, None, 1e-5, 2560, False, out_dtype=bf16, residual=r32, residual_dtype=f32)[0],
        "add bwd s fp32, dy bf16, ds fp32 -> dh bf16": lambda: rmsnorm.rmsnorm_backward(
            x32, w, None, dyb, 1e-5, 2560, False, dres=ds32, dh_dtype=bf16)[0],
        "gated fwd 5120 bf16": lambda: rmsnorm.rmsnorm_forward(gx, wg, gz, 1e-5, 5120, False),
        "gated bwd 5120 bf16": lambda: rmsnorm.rmsnorm_backward(gx, wg, gz, gy, 1e-5, 5120, False)[0],
    }
    nbytes = {
        "block fwd x fp32 -> y bf16": 6, "block bwd x fp32, dy bf16": 10, "block fwd all fp32": 8,
        "block bwd all fp32": 12, "block fwd all bf16": 4, "block bwd all bf16": 6,
        "add fwd bf16 + fp32 -> y bf16, s fp32": 12, "add bwd s fp32, dy bf16, ds fp32 -> dh bf16": 18,
        "gated fwd 5120 bf16": 12, "gated bwd 5120 bf16": 20,
    }
    return out, {k: v * ROWS * 2560 for k, v in nbytes.items()}


def composition():
    """add_rmsnorm against the add and the norm apart (forward + backward, the gradients of hidden, residual, w)."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    h = torch.randn(ROWS, 2560, device="cuda", generator=gen).bfloat16().requires_grad_()
    r = torch.randn(ROWS, 2560, device="cuda", generator=gen).requires_grad_()
    w = torch.randn(2560, device="cuda", generator=gen).requires_grad_()
    dy = torch.randn(ROWS, 2560, device="cuda", generator=gen).bfloat16()
    ds = torch.randn(ROWS, 2560, device="cuda", generator=gen)

    def fused():
        y, s = add_rmsnorm(h, r, w, eps=1e-5, out_dtype=torch.bfloat16)
        return torch.autograd.grad([y, s], [h, r, w], [dy, ds])

    def apart():
        s = h + r
        y = flashssm.rmsnorm_gated(s, w, eps=1e-5, out_dtype=torch.bfloat16)
        return torch.autograd.grad([y, s], [h, r, w], [dy, ds])

    return {"apart: add, then rmsnorm_gated (fwd+bwd)": apart, "add_rmsnorm (fwd+bwd)": fused}


VARIANTS = [f"LOAD_VECTOR={v},SPLIT_TILE={t},WIDE_GROUP={g}"
            for v, t, g in ((0, False, 4096), (4, False, 4096), (0, True, 4096), (4, True, 4096), (0, True, 8192),
                            (4, True, 8192))]


def parse(variant: str) -> dict:
    return {name: ast.literal_eval(value) for name, value in (item.split("=", 1) for item in variant.split(","))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="", help="only the cases whose name holds this")
    ap.add_argument("--variant", action="append", help="NAME=VALUE,... of rmsnorm's switches")
    args = ap.parse_args()
    variants = args.variant or VARIANTS
    fns, nbytes = cases()
    fns = {k: f for k, f in fns.items() if args.cases in k}
    times = {(name, v): [] for name in fns for v in variants}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            ref = None
            for v in variants:
                setting = parse(v)
                if setting.get("WIDE_GROUP", 4096) != 4096 and not name.startswith("gated bwd"):
                    continue
                real = {n: getattr(rmsnorm, n) for n in setting}
                for n, value in setting.items():
                    setattr(rmsnorm, n, value)
                try:
                    got = fn()
                    same = "" if ref is None else ("" if torch.equal(got, ref) else " (NOT the same bits)")
                    ref = got if ref is None else ref
                    times[(name, v)].append(do_bench(fn, warmup=10, rep=100, return_mode="median"))
                finally:
                    for n, value in real.items():
                        setattr(rmsnorm, n, value)
                if same:
                    print(f"{name}: {v}{same}", flush=True)
    for i, v in enumerate(variants):
        print(f"[{i}] {v}")
    print(f"{'case':44s} " + " ".join(f"{'[%d]' % i:>17s}" for i in range(len(variants))))
    for name in fns:
        cols = []
        for v in variants:
            if times[(name, v)]:
                t = statistics.median(times[(name, v)])
                cols.append(f"{t * 1e3:6.1f}us {nbytes[name] / t / 1e9:4.2f}TB/s")
            else:
                cols.append("")
        print(f"{name:44s} " + " ".join(f"{c:>17s}" for c in cols), flush=True)
    for name, fn in composition().items():
        print(f"{name:48s} {do_bench(fn, warmup=10, rep=100, return_mode='median') * 1e3:7.1f} us", flush=True)


if __name__ == "__main__":
    main()
