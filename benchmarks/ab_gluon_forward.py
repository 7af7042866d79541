"""A/B of the SSD forward: the Gluon kernel (forward_gluon.py) against the Triton kernel, in one process.

    PYTHONPATH=. python3 benchmarks/ab_gluon_forward.py [--workload 2.7b-8x4K ...] [--rounds 5] [--groups 2,4]
        [--dtype fp16]

Both through `forward.launch` with the package's configuration for the shape (`LaunchConfig.gluon` False forces the
Triton kernel), alternating, medians of `rounds` do_bench medians; y's largest difference between the two is printed
beside (late publish: the same arithmetic, 0 or a few rounding flips; early: other roundings of the own state).
`--groups`: the Gluon kernel (and with `--triton-groups` the Triton kernel) also at other spans (chunks a program)
than the package's table picks, as constexprs. Where the Gluon kernel takes a run-time span (`LaunchConfig.gluon_group`,
one wave at batch 1), also the rule's spans (gluon-rule) and the same span as a constexpr (gluon-G*, the same bits). `--move32`: the
Gluon kernel also with its per-head D given as a (heads, headdim) view (stride 0 along headdim), which takes the
epilogue that moves y to the stores' layout in fp32 (the kernel before the thirty-first session): the same bits.
`--graph`: each call timed as replays of a CUDA graph (do_bench_cudagraph), without the host's launch time, which
sets a 1x2K call's time and moves it by 2x between runs. `--before FILE`: the Gluon kernel also from another version of forward_gluon.py (e.g. `git show
REV:flashssm/ops/ssd/forward_gluon.py > before.py`), launched through Triton's own launcher with the constexprs it
does not know left out. `--dtype fp16`: the workload's bf16 tensors (x, B, C, z) cast to fp16 (the kernels' fp16 forms,
which scale their computed operands: ssd_forward.md, sixty-first session).
"""

import argparse
import dataclasses
import os

import torch

from triton.testing import do_bench, do_bench_cudagraph

from benchmarks.train_harness import DTYPES, add_dtype_argument
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--groups", default="", help="also time the Gluon kernel at these chunks a program, e.g. 2,4")
    parser.add_argument("--triton-groups", action="store_true", help="time the Triton kernel at --groups too")
    parser.add_argument("--move32", action="store_true", help="also time the Gluon kernel's fp32 move of y")
    parser.add_argument("--graph", action="store_true",
                        help="time each call replayed from a CUDA graph (no host time: for launch-bound shapes)")
    parser.add_argument("--before", action="append", default=[],
                        help="also time the Gluon kernel of this forward_gluon.py (repeatable)")
    add_dtype_argument(parser)
    args = parser.parse_args()
    for name in args.workload or ["2.7b-8x4K", "2.7b-32x2K"]:
        w = WORKLOADS[name]
        inp = {k: v.to(DTYPES[args.dtype]) if torch.is_tensor(v) and v.dtype == torch.bfloat16 else v
               for k, v in w.make_inputs("cuda").items()}
        dims = check_ssd_scan(**inp, chunk_size=w.chunk_size)
        cfg = forward.pick_config(dims, inp["x"].dtype, inp["x"].device)
        why = forward.gluon_blocker(dims, inp["x"], inp["B"], inp["C"], inp.get("z"))
        if why:
            print(f"{name}: the Gluon kernel does not take it ({why})")
            continue
        calls = {"triton": dataclasses.replace(cfg, gluon=False), "gluon": cfg}
        if cfg.gluon_group is not None:  # the run-time span's one wave: also the rule's spans, and its span a constexpr
            calls["gluon-rule"] = dataclasses.replace(cfg, gluon_group=None)
            calls[f"gluon-G{cfg.gluon_group}"] = dataclasses.replace(cfg, group=cfg.gluon_group, gluon_group=None)
        for g in (int(v) for v in args.groups.split(",") if v):
            if g != cfg.group:
                calls[f"gluon-G{g}"] = dataclasses.replace(cfg, group=g, gluon_group=None)
                if args.triton_groups:
                    calls[f"triton-G{g}"] = dataclasses.replace(cfg, group=g, gluon=False)
        fns = {k: (lambda c: lambda: forward.launch(dims, **inp, config=c)[0])(c) for k, c in calls.items()}
        diff = (fns["gluon"]().float() - fns["triton"]().float()).abs().max().item()
        same = ""
        for path in args.before:
            key = f"gluon-{os.path.splitext(os.path.basename(path))[0]}"
            fns[key] = (lambda m: lambda: _launch_with(m, dims, inp, cfg))(_before_module(path))
            same += f", {key} same bits: {torch.equal(fns['gluon'](), fns[key]())}"
        if args.move32 and inp.get("D") is not None and inp["D"].dim() == 1:
            inp32 = {**inp, "D": inp["D"][:, None].expand(-1, dims.headdim)}
            fns["gluon-move32"] = lambda: forward.launch(dims, **inp32, config=cfg)[0]
            same += f", move32 same bits: {torch.equal(fns['gluon'](), fns['gluon-move32']())}"
        times = {k: [] for k in fns}
        bench = (lambda fn: do_bench_cudagraph(fn, rep=200, return_mode="median")) if args.graph else \
            (lambda fn: do_bench(fn, warmup=25, rep=200, return_mode="median"))
        for _ in range(args.rounds):
            for k, fn in fns.items():
                times[k].append(bench(fn))
        med = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
        if cfg.gluon_group is not None:
            same += f", same bits as gluon-G{cfg.gluon_group}: {torch.equal(fns['gluon'](), fns[f'gluon-G{cfg.gluon_group}']())}"
        print(f"{name} (group {cfg.group}, Gluon's {cfg.gluon_group or cfg.group}): triton {med['triton']:.4f} ms, gluon {med['gluon']:.4f} ms "
              f"({med['gluon'] / med['triton'] - 1:+.1%}), max |diff| {diff:.1e}"
              + "".join(f", {k} {med[k]:.4f}" for k in med if k.startswith(("gluon-", "triton-"))) + same, flush=True)


def _before_module(path):
    """forward_gluon.py of another version, as a module whose kernel, indexed by a grid, drops the constexprs it
    does not take."""
    import importlib.util
    import types

    spec = importlib.util.spec_from_file_location("forward_gluon_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = mod._ssd_fwd_gluon_kernel
    known = {p.name for p in kernel.params} | {"num_warps", "num_stages"}

    class Shim:
        def __getitem__(self, grid):
            def call(*a, **meta):
                if "span" not in known:  # a kernel from before the run-time span (thirty-third session): no `span`
                    a = a[:-1]
                return kernel[grid](*a, **{k: v for k, v in meta.items() if k in known})
            return call

    return types.SimpleNamespace(**{**vars(forward.forward_gluon), "_ssd_fwd_gluon_kernel": Shim()})


def _launch_with(module, dims, inp, cfg):
    """forward.launch with `module` as forward_gluon and Triton's own launcher (the shim is no JIT function)."""
    from flashssm import _runtime

    saved = forward.forward_gluon, _runtime.direct_launch
    forward.forward_gluon, _runtime.direct_launch = module, False
    try:
        return forward.launch(dims, **inp, config=cfg)[0]
    finally:
        forward.forward_gluon, _runtime.direct_launch = saved


if __name__ == "__main__":
    main()
