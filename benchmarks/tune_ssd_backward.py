"""Time ssd_scan's chunk-parallel backward on the GPU, launch by launch and as a whole, over its
knobs (how products with a computed operand are taken, the tile, warps per launch, heads summed per
program of the dB/dC launch), on the 2.7B mixer shape in bf16, with every option of a Mamba-2 layer
(D, z, dt_bias, softplus). Each variant's gradients are compared with the first variant's and
with a float64 reference at 1x2K (errors relative to the reference's norm).
Run: python benchmarks/tune_ssd_backward.py [--quick]   (the table goes to stdout)"""

import argparse
import itertools

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward, backward_chain
from flashssm.ops.ssd.forward import entering_states, launch

NAMES = ("dx", "ddt", "dA", "dB", "dC", "dD", "dz", "ddt_bias")


def inputs(name):
    w = WORKLOADS[name]
    inp = w.make_inputs("cuda")
    x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
    h = x.shape[2]
    g = torch.Generator(device="cuda").manual_seed(1)
    extra = dict(D=torch.randn(h, device="cuda", generator=g), z=torch.randn_like(x),
                 dt_bias=torch.rand(h, device="cuda", generator=g) - 4.0)
    dims = check_ssd_scan(x, dt, A, B, C, chunk_size=w.chunk_size, D=extra["D"], z=extra["z"],
                          dt_bias=extra["dt_bias"], dt_softplus=True)
    return dims, x, dt, A, B, C, extra


def reference_grads(dims, x, dt, A, B, C, extra, dy):
    from flashssm.ops.ssd.reference import ssd_scan_chunked

    leaves = [t.detach().double().requires_grad_() for t in (x, dt, A, B, C, extra["D"], extra["z"], extra["dt_bias"])]
    y, _ = ssd_scan_chunked(*leaves[:5], chunk_size=dims.chunk_size, D=leaves[5], z=leaves[6], dt_bias=leaves[7],
                            dt_softplus=True)
    y.backward(dy.double())
    return [t.grad for t in leaves]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the default knobs and a few neighbours only")
    ap.add_argument("--launches", action="store_true", help="only the time of each launch (profiler), default knobs")
    ap.add_argument("--forms", action="store_true", help="the parallel and chain forms over batch x seqlen")
    ap.add_argument("--nheads", type=int, default=80, help="--forms: heads (80: the 2.7B mixer, 32: the 370m one)")
    ap.add_argument("--no-z", action="store_true", help="--forms: no z gate (a Mamba-2 layer with its gated norm)")
    ap.add_argument("--sizes", default="", help="--forms: batch x seqlen list, e.g. 8x2048,1x32768")
    ap.add_argument("--chain-modes", action="store_true", help="the chain form's product modes and sub-chunks: "
                    "backward time on 8x4K, 1x32K, 1x2K and gradient errors against float64 at 2x4K")
    ap.add_argument("--variants", default="", help="--chain-modes: MODE[:SPLIT_MASK]/SUB[/STAGES] list, e.g. "
                    "tf32/16,split:283/32 (default: tf32, split and round at 16, split at 32)")
    ap.add_argument("--chain-launches", action="store_true", help="the chain form's kernels, time of each (profiler), "
                    "without options and with z, D, dt_bias, softplus; the gradient chain's launch at 4 and 8 warps, "
                    "sub-chunks of 32, 64, 128")
    args = ap.parse_args()
    if args.chain_launches:
        return chain_launches()
    if args.launches:
        return launches()
    if args.chain_modes:
        return chain_modes(args.variants)
    if args.forms:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",") if s] or None
        return forms(args.nheads, not args.no_z, sizes)
    for name in ("2.7b-1x2K", "2.7b-8x4K", "2.7b-1x32K"):
        dims, x, dt, A, B, C, extra = inputs(name)
        dy = torch.randn_like(x)
        kw = dict(D=extra["D"], z=extra["z"], dt_bias=extra["dt_bias"], dt_softplus=True)
        _, _, ypre, _ = launch(dims, x, dt, A, B, C, store_ypre=True, **kw)
        t_fwd = do_bench(lambda: launch(dims, x, dt, A, B, C, store_ypre=True, **kw), warmup=25, rep=100)
        t_states = do_bench(lambda: entering_states(dims, x, dt, A, B, dt_bias=kw["dt_bias"], dt_softplus=True),
                            warmup=25, rep=100)
        print(f"{name}: forward (with y before the gate) {t_fwd:.3f} ms, state recompute {t_states:.3f} ms",
              flush=True)
        want = reference_grads(dims, x, dt, A, B, C, extra, dy) if name == "2.7b-1x2K" else None
        if args.quick:
            grid = [(backward.SPLIT, 64, (4, 4, 8), None), (backward.ROUND, 64, (4, 4, 8), None),
                    (backward.SPLIT, 64, (4, 8, 8), None), (backward.SPLIT, 64, (4, 4, 4), None),
                    (backward.SPLIT, 32, (4, 4, 4), None), (backward.TF32, 64, (4, 4, 8), None)]
        else:
            grid = [(m, t, (4, wd, wb), None) for m, t, wd, wb in
                    itertools.product((backward.SPLIT, backward.ROUND, backward.TF32), (32, 64), (4, 8), (4, 8))]
        grid += [(backward.SPLIT, 64, (4, 4, 8), hpb) for hpb in (1, 4, 16)]
        first = None
        for mode, tile, warps, hpb in grid:
            label = f"mode={('round', 'split', 'tf32')[mode]:5} tile={tile} warps={warps} heads/block={hpb or 'auto'}"

            def run():
                return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, ypre=ypre, mode=mode, tile=tile,
                                             warps=warps, heads_per_block=hpb, **kw)
            try:
                got = run()
                t = do_bench(run, warmup=5, rep=30)
            except Exception as err:  # a config that does not compile or fit is reported, not fatal
                print(f"  {label}: {type(err).__name__}: {err}"[:300], flush=True)
                continue
            first = first or got
            diff = max(((a.float() - b.float()).norm() / b.float().norm()).item()
                       for a, b in zip(got, first) if a is not None and b.float().norm() > 0)
            line = f"  {label}: backward {t:.3f} ms (fwd+bwd {t + t_fwd:.3f}); diff to first {diff:.1e}"
            if want is not None:
                errs = [(g.double() - w).norm().item() / w.norm().item() for g, w in zip(got[:8], want)]
                line += "; vs float64 " + " ".join(f"{n} {e:.1e}" for n, e in zip(NAMES, errs))
            print(line, flush=True)
        del x, dt, A, B, C, extra, dy, ypre
        torch.cuda.empty_cache()


LAUNCH_VARIANTS = [{}, {"stages": (2, 2, 2)}, {"stages": (2, 2, 1)}, {"warps": (4, 8, 8)}, {"warps": (4, 4, 4)},
                   {"warps": (4, 8, 4)}, {"mode": 0}, {"heads_per_block": 8}]


FORM_SIZES = ((1, 2048), (2, 2048), (4, 2048), (1, 8192), (2, 4096), (4, 4096), (8, 4096), (1, 32768))


def forms(nheads=80, with_z=True, sizes=None):
    """Backward time of both forms on the 2.7B mixer's head shape (bf16, D, dt_bias, softplus, z unless
    with_z is False) with nheads heads, as the grid of (chunk, head) programs grows: where the default
    should switch from one to the other."""
    from flashssm.bench.workloads import SSDWorkload

    print(f"nheads {nheads}, z {with_z}", flush=True)
    for batch, seqlen in sizes or FORM_SIZES:
        inp = SSDWorkload("probe", batch, seqlen, nheads=nheads).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        h = x.shape[2]
        g = torch.Generator(device="cuda").manual_seed(1)
        kw = dict(D=torch.randn(h, device="cuda", generator=g), z=torch.randn_like(x) if with_z else None,
                  dt_bias=torch.rand(h, device="cuda", generator=g) - 4.0, dt_softplus=True)
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256, **kw)
        ypre = launch(dims, x, dt, A, B, C, store_ypre=True, **kw)[2] if with_z else None
        dy = torch.randn_like(x)
        line = f"{batch}x{seqlen} ({-(-seqlen // 256) * batch * h} programs):"
        for form in ("parallel", "chain"):
            def run():
                return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, ypre=ypre, form=form, **kw)
            run()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            run()
            peak = (torch.cuda.max_memory_allocated() - base) / 2**20
            line += f" {form} {do_bench(run, warmup=5, rep=30):.3f} ms ({peak:.0f} MiB extra)"
        print(line, flush=True)
        del x, dt, A, B, C, kw, dy, ypre, inp
        torch.cuda.empty_cache()


CHAIN_VARIANTS = "tf32/16,split/16,round/16,split/32"
MODE_NAMES = ("round", "split", "tf32")


def _chain_variant(spec):
    """'split:283/32' -> dict(mode=SPLIT, split_mask=283, sub=32); 'split:283/32/1' adds num_stages=1."""
    mode, _, sub = spec.partition("/")
    sub, _, stages = sub.partition("/")
    mode, _, mask = mode.partition(":")
    v = dict(mode=MODE_NAMES.index(mode), sub=int(sub or 16))
    if stages:
        v["num_stages"] = int(stages)
    if mask:
        v["split_mask"] = int(mask)
    return v


def chain_modes(variants=""):
    """The chain form (the default backward) per product mode and SUB: gradient errors against a float64
    reference at 2x4K (D, z, dt_bias, softplus), then the backward's time on the train workloads' shapes
    (D, dt_bias, softplus, no z)."""
    from flashssm.bench.workloads import SSDWorkload

    specs = (variants or CHAIN_VARIANTS).split(",")
    chain_variants = [_chain_variant(spec) for spec in specs]
    labels = [f"mode={spec.split('/')[0]} sub={v['sub']} stages={v.get('num_stages', backward_chain.STAGES)}"
              for spec, v in zip(specs, chain_variants)]
    inp = SSDWorkload("probe", 2, 4096).make_inputs("cuda")
    x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
    h = x.shape[2]
    g = torch.Generator(device="cuda").manual_seed(1)
    kw = dict(D=torch.randn(h, device="cuda", generator=g), z=torch.randn_like(x),
              dt_bias=torch.rand(h, device="cuda", generator=g) - 4.0, dt_softplus=True)
    dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256, **kw)
    ypre = launch(dims, x, dt, A, B, C, store_ypre=True, **kw)[2]
    dy = torch.randn_like(x)
    want = reference_grads(dims, x, dt, A, B, C, kw, dy)
    print("errors at 2x4K (relative to the float64 gradient's norm):", flush=True)
    for label, v in zip(labels, chain_variants):
        got = backward.ssd_backward(dims, dy, None, x, dt, A, B, C, ypre=ypre, form="chain", **kw, **v)
        errs = [((a.double() - b).norm() / b.norm()).item() for a, b in zip(got[:8], want)]
        print(f"  {label}: " + " ".join(f"{n} {e:.2e}" for n, e in zip(NAMES, errs)), flush=True)
    del x, dt, A, B, C, kw, dy, ypre, inp, want
    torch.cuda.empty_cache()
    for batch, seqlen in ((8, 4096), (1, 32768), (1, 2048)):
        inp = SSDWorkload("probe", batch, seqlen).make_inputs("cuda")
        x, dt, A, B, C = (inp[k] for k in ("x", "dt", "A", "B", "C"))
        kw = dict(D=torch.randn(h, device="cuda", generator=g), dt_bias=torch.rand(h, device="cuda", generator=g) - 4.0,
                  dt_softplus=True)
        dims = check_ssd_scan(x, dt, A, B, C, chunk_size=256, **kw)
        dy = torch.randn_like(x)
        line = f"{batch}x{seqlen} backward ms:"
        for label, v in zip(labels, chain_variants):
            def run():
                return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, form="chain", **kw, **v)
            try:
                run()
                line += f" | {label} {do_bench(run, warmup=5, rep=40):.3f}"
            except Exception as err:
                line += f" | {label} {type(err).__name__}"
        print(line, flush=True)
        del x, dt, A, B, C, kw, dy, inp
        torch.cuda.empty_cache()


def launches():
    """GPU time of each kernel of one backward call (the profiler's sum over 10 calls / 10)."""
    from torch.profiler import ProfilerActivity, profile

    for name in ("2.7b-1x2K", "2.7b-8x4K"):
        dims, x, dt, A, B, C, extra = inputs(name)
        dy = torch.randn_like(x)
        kw = dict(D=extra["D"], z=extra["z"], dt_bias=extra["dt_bias"], dt_softplus=True)
        _, _, ypre, _ = launch(dims, x, dt, A, B, C, store_ypre=True, **kw)

        for knobs in LAUNCH_VARIANTS:
            def run():
                return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, ypre=ypre, **kw, **knobs)
            try:
                run()
            except Exception as err:
                print(f"{name} {knobs}: {type(err).__name__}: {err}"[:300], flush=True)
                continue
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    run()
                torch.cuda.synchronize()
            times = {e.key: e.device_time_total / 10 / 1000 for e in prof.key_averages()}
            total = sum(times.values())
            ours = {k: v for k, v in times.items() if k.startswith("_")}
            print(f"{name} {knobs}: all kernels {total:.3f} ms; " + ", ".join(f"{k} {v:.3f}" for k, v in ours.items()))
            for key, k in backward.compiled.items():
                print(f"    {key}: regs {k.n_regs} spills {k.n_spills} smem {k.metadata.shared}")
        del x, dt, A, B, C, extra, dy, ypre
        torch.cuda.empty_cache()


def kernel_times(run, calls=10):
    """{kernel name: GPU ms per call} of run() by the profiler, and their sum."""
    from torch.profiler import ProfilerActivity, profile

    run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            run()
        torch.cuda.synchronize()
    times = {e.key: e.device_time_total / calls / 1000 for e in prof.key_averages()}
    return times, sum(times.values())


def chain_launches():
    """GPU time of each kernel of the chain form's backward, per workload and option set."""
    for name in ("2.7b-1x32K", "2.7b-8x4K", "2.7b-1x2K"):
        dims0, x, dt, A, B, C, extra = inputs(name)
        dy = torch.randn_like(x)
        for opts in ("none", "z"):
            kw = dict(D=extra["D"], z=extra["z"], dt_bias=extra["dt_bias"], dt_softplus=True) if opts == "z" else {}
            dims = dims0 if opts == "z" else check_ssd_scan(x, dt, A, B, C, chunk_size=dims0.chunk_size)
            if opts == "z":
                kw["ypre"] = launch(dims, x, dt, A, B, C, store_ypre=True, **kw)[2]
            for knobs in ({}, {"dstates": True}, {"dstates": True, "dstates_warps": 8}, {"dstates": True, "dstates_sub": 64},
                          {"dstates": True, "dstates_sub": 128}, {"dstates": True, "dstates_sub": 64, "dstates_warps": 8}):
                def run():
                    return backward.ssd_backward(dims, dy, None, x, dt, A, B, C, form="chain", **kw, **knobs)
                times, total = kernel_times(run)
                ours = {k: v for k, v in times.items() if k.startswith("_")}
                print(f"{name} {opts} {knobs}: all kernels {total:.3f} ms; "
                      + ", ".join(f"{k} {v:.3f}" for k, v in ours.items()), flush=True)
        del x, dt, A, B, C, extra, dy
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
