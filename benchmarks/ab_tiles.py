"""A/B of the chain backward's gradient launch: the sweeps (`_ssd_bwd_kernel`) against the tiles
(ops/ssd/backward_tiles.py) in several configurations, alternating, several rounds, on the 2.7B mixer shape
(bf16). Prints the median backward time of each variant, its largest relative difference from the first
variant's gradients, and (--errors) each variant's gradient errors against the float64 reference at 1x2K.

    python benchmarks/ab_tiles.py [ROUNDS] [--shapes 8x4096,1x32768] [--opts none,d,dz]
        [--variants sweeps,tiles,tiles:w8,tiles:round:t32] [--errors] [--device cpu]

A variant is "sweeps" (the default gradient kernel; `dstates` follows chain_launch) or "tiles" with
colon-separated knobs: wN (warps), tN (tokens a block), sN (stages), round|split|tf32 (mode), mN (split mask),
hN (heads a program of the pair launch sums), vN (that launch's warps), rN / qN (the tiles kernel's / the pair
launch's register cap), cN (the chain launch's form: 0 a program a chunk, N >= 1 spans of N chunks), dN (the chain
launch's sub-chunk), p0 / p1 (the state paths in the tiles kernel / a launch of their own), eN, fN, gN (that launch's
heads a program, warps, register cap), jN (its stages), TN (its tokens a block), oN (the pair launch's
stages), kN (the backward's chunk size; the forward's is 256), det (the deterministic mode), i0 / i1 (the states and
their gradients in two buffers / one, the states recomputed over the gradients), K0 / K1 (the tiles kernel's pair
products whole / in two halves of their tokens), C0 / C1 (the decay gradient's column sums from the pair launch / from
the tiles kernel's bracket . x), H0 / H1 (few chains: the state recompute and the chain launch a program a chunk /
two chunks a program, storing at both), noda (no decay gradient: dx, dB, dC and the rest only, for what the decay gradient's
sums cost each launch).
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from benchmarks.tune_ssd_backward import kernel_times
from flashssm.bench.run import peak_extra_mb
from flashssm.bench.workloads import SSDWorkload
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward
from flashssm.ops.ssd.backward_chain import ROUND, SPLIT, TF32

NAMES = ("dx", "ddt", "dA", "dB", "dC", "dD", "dz", "ddt_bias", "dinit")


def variant_kwargs(spec: str) -> dict:
    parts = spec.split(":")
    if parts[0] == "sweeps":
        return dict(tiles=False)
    kw = dict(tiles=True)
    for part in parts[1:]:
        if part == "det":
            kw["deterministic"] = True
        elif part == "noda":  # no decay gradient (ddt, dA, dt_bias): what its sums cost each launch
            kw["needs"] = [True, False, False] + [True] * 6
        elif part in ("round", "split", "tf32"):
            kw["mode"] = {"round": ROUND, "split": SPLIT, "tf32": TF32}[part]
        elif part[0] == "w":
            kw["tiles_warps"] = int(part[1:])
        elif part[0] == "t":
            kw["tile"] = int(part[1:])
        elif part[0] == "s":
            kw["tiles_stages"] = int(part[1:])
        elif part[0] == "m":
            kw["split_mask"] = int(part[1:])
        elif part[0] == "h":
            kw["bc_heads"] = int(part[1:])
        elif part[0] == "v":
            kw["bc_warps"] = int(part[1:])
        elif part[0] == "r":
            kw["tiles_maxnreg"] = int(part[1:])
        elif part[0] == "q":
            kw["bc_maxnreg"] = int(part[1:])
        elif part[0] == "p":
            kw["paths"] = bool(int(part[1:]))
        elif part[0] == "e":
            kw["paths_heads"] = int(part[1:])
        elif part[0] == "f":
            kw["paths_warps"] = int(part[1:])
        elif part[0] == "g":
            kw["paths_maxnreg"] = int(part[1:])
        elif part[0] == "T":
            kw["paths_tile"] = int(part[1:])
        elif part[0] == "o":
            kw["bc_stages"] = int(part[1:])
        elif part[0] == "j":
            kw["paths_stages"] = int(part[1:])
        elif part[0] == "c":
            kw["dstates_span"] = int(part[1:])
        elif part[0] == "d":
            kw["dstates_sub"] = int(part[1:])
        elif part[0] == "k":
            kw["chunk"] = int(part[1:])
        elif part[0] == "i":
            kw["in_place"] = bool(int(part[1:]))
        elif part[0] == "C":
            kw["cols_from_bracket"] = bool(int(part[1:]))
        elif part[0] == "K":
            kw["k_halves"] = bool(int(part[1:]))
        elif part[0] == "H":
            kw["halves"] = bool(int(part[1:]))
        else:
            raise ValueError(f"unknown knob {part!r} in {spec!r}")
    return kw


def inputs(batch, seqlen, device, opt):
    inp = SSDWorkload("probe", batch, seqlen, **({} if device == "cuda" else dict(nheads=2, dstate=16))).make_inputs(device)
    x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
    h = x.shape[2]
    gen = torch.Generator(device=device).manual_seed(0)
    D = torch.randn(h, device=device, generator=gen)
    dt_bias = torch.randn(h, device=device, generator=gen) * 0.5
    z = torch.randn(x.shape, device=device, dtype=x.dtype, generator=gen)
    dy = torch.randn(x.shape, device=device, dtype=x.dtype, generator=gen)
    kw = {}
    if opt in ("d", "dz"):
        kw = dict(D=D, dt_bias=dt_bias, dt_softplus=True)
    if opt == "dz":
        kw["z"] = z
    dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256, **kw)
    return dims, (x, dt, A, B, C), kw, dy


def call(dims, dy, x, dt, A, B, C, kw, spec):
    """The chain backward of variant `spec`."""
    return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, form="chain", **kw, **variant_kwargs(spec))


def errors(variants, device, opt, shape="1x2048"):
    """Each variant's gradient errors against float64 (norm-relative), `shape` of the 2.7B shape, with the opt's
    options."""
    from flashssm.ops.ssd.forward import launch
    from flashssm.ops.ssd.reference import ssd_scan_chunked

    dims, (x, dt, A, B, C), kw, dy = inputs(*map(int, shape.split("x")), device, opt)
    if "z" in kw:
        kw = dict(kw, ypre=launch(dims, x, dt, A, B, C, store_ypre=True, **kw)[2])
    names = ("x", "dt", "A", "B", "C") + tuple(k for k in ("D", "z", "dt_bias") if k in kw)
    tensors = dict(zip(("x", "dt", "A", "B", "C"), (x, dt, A, B, C)), **kw)
    leaves = {k: tensors[k].detach().double().requires_grad_() for k in names}
    y, _ = ssd_scan_chunked(**leaves, chunk_size=256, dt_softplus=kw.get("dt_softplus", False))
    y.backward(dy.double())
    want = {k: leaves[k].grad for k in names}
    for v in variants:
        got = call(dims, dy, x, dt, A, B, C, kw, v)
        errs = {n: float((g.double() - want[k]).norm() / want[k].norm()) for n, g, k in
                zip(NAMES, got, ("x", "dt", "A", "B", "C", "D", "z", "dt_bias")) if g is not None and k in want}
        print(f"errors {shape} {opt} {v}: " + " ".join(f"{n} {e:.2e}" for n, e in errs.items()), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", type=int, nargs="?", default=3)
    ap.add_argument("--shapes", default="8x4096,1x32768,1x2048")
    ap.add_argument("--opts", default="none,d")
    ap.add_argument("--variants", default="sweeps,tiles,tiles:w8")
    ap.add_argument("--errors", action="store_true")
    ap.add_argument("--errors-shape", default="1x2048", help="--errors: the shape, BATCHxSEQLEN")
    ap.add_argument("--profile", action="store_true", help="also each variant's time per kernel (torch profiler)")
    ap.add_argument("--memory", action="store_true", help="also each variant's peak memory above what is allocated before")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of this script under the interpreter, no timing")
    a = ap.parse_args()
    variants = a.variants.split(",")
    if a.errors:
        for opt in a.opts.split(","):
            errors(variants, a.device, opt, a.errors_shape)
    for shape in a.shapes.split(","):
        batch, seqlen = map(int, shape.split("x"))
        for opt in a.opts.split(","):
            dims, (x, dt, A, B, C), kw, dy = inputs(batch, seqlen, a.device, opt)
            if "z" in kw:
                kw["ypre"] = torch.randn_like(x)

            def run(v):
                return call(dims, dy, x, dt, A, B, C, kw, v)

            ref = run(variants[0])
            diffs = {}
            for v in variants:
                got = run(v)
                diffs[v] = max(((float((g.float() - r.float()).norm() / r.float().norm().clamp_min(1e-30)), n)
                                for n, g, r in zip(NAMES, got, ref) if g is not None), default=(0.0, "-"))
            times = {v: [] for v in variants}
            for _ in range(a.rounds):
                for v in variants:
                    times[v].append(do_bench(lambda: run(v), warmup=10, rep=50) if a.device == "cuda" else 1.0)
            if a.profile and a.device == "cuda":
                for v in variants:
                    per_kernel, _ = kernel_times(lambda: run(v))
                    top = sorted(((t, k) for k, t in per_kernel.items() if t > 0 and not k.startswith("cuda")),
                                 reverse=True)
                    print(f"  {shape} {opt} {v}: " + " ".join(f"{k[:28]} {t:.3f}" for t, k in top[:7]), flush=True)
            if a.memory and a.device == "cuda":
                peaks = {v: peak_extra_mb(lambda: run(v), x.device) for v in variants}
                print(f"  {shape} {opt} peak above the inputs, MiB: "
                      + " | ".join(f"{v} {m:.0f}" for v, m in peaks.items()), flush=True)
            base = statistics.median(times[variants[0]])
            print(f"{shape} {opt}: " + " | ".join(
                f"{v} {statistics.median(t):.3f} ms ({statistics.median(t) / base:.3f}x; max diff {diffs[v][0]:.1e} "
                f"{diffs[v][1]})" for v, t in times.items()), flush=True)
            del x, dt, A, B, C, dy
            if a.device == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
