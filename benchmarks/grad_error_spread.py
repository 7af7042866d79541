"""Spread of ssd_scan's gradient errors over random inputs, against the float64 reference, for flashssm's
backward forms and mamba_ssm's (when importable) on the same inputs: is a test failing near its
tolerance a flaky draw, a regression, or the method's precision?

    PYTHONPATH=. python3 -m benchmarks.grad_error_spread [SEEDS] [--chain MODE[:SPLIT_MASK]]... [--no-parallel]
        [--no-mamba] [--dtypes fp16,bf16]

--chain adds a chain-form variant (mode split, tf32 or round; SPLIT_MASK: the SPLIT products that split,
backward_chain.SPLIT_ALL's bits); without it the chain form runs with its defaults.

Shapes: test_gpu_real_shapes' B1-L3000-H8-P96-N48-G4 at chunk 256 with every option (D per headdim, z,
dt_bias, softplus, initial states, a final-state gradient), fp16 and bf16. Prints, per seed and
implementation, the relative error of each gradient; then the worst over seeds."""

import argparse
import contextlib

import torch

import flashssm
from flashssm.bench.impls import Unavailable, import_mamba_ssm
from flashssm.ops.ssd import backward, backward_chain
from flashssm.ops.ssd import reference as ref
from tests.helpers import rel_err, ssd_inputs

INPUTS = ("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states")


def grads(call, kw, dy, dfinal):
    leaves = {k: (v.detach().clone().requires_grad_() if torch.is_tensor(v) and v.is_floating_point() else v)
              for k, v in kw.items()}
    y, final = call(leaves)
    torch.autograd.backward([y, final], [dy.to(y.dtype), dfinal.to(final.dtype)])
    return {k: leaves[k].grad for k in INPUTS if k in leaves}


class _Defaults:
    """The backward's defaults (form, chain mode, split mask) set while a variant's forward and backward
    run: the backward reads them when autograd calls it, after the forward has returned."""

    def __init__(self, form, mode=None, mask=None):
        self.values = (form, backward_chain.DEFAULT_MODE if mode is None else mode,
                       backward_chain.DEFAULT_SPLIT_MASK if mask is None else mask)

    def __enter__(self):
        self.saved = backward.DEFAULT_FORM, backward_chain.DEFAULT_MODE, backward_chain.DEFAULT_SPLIT_MASK
        backward.DEFAULT_FORM, backward_chain.DEFAULT_MODE, backward_chain.DEFAULT_SPLIT_MASK = self.values

    def __exit__(self, *exc):
        backward.DEFAULT_FORM, backward_chain.DEFAULT_MODE, backward_chain.DEFAULT_SPLIT_MASK = self.saved


def _chain(spec):
    """'split:283' -> the chain form with that mode and split mask."""
    mode, _, mask = spec.partition(":")
    return _Defaults("chain", getattr(backward_chain, mode.upper()), int(mask) if mask else backward_chain.SPLIT_ALL)


def _flashssm(kw):
    return flashssm.ssd_scan(**kw, chunk_size=256, return_final_states=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("seeds", type=int, nargs="?", default=6)
    p.add_argument("--chain", action="append", default=[])
    p.add_argument("--no-parallel", action="store_true")
    p.add_argument("--no-mamba", action="store_true")
    p.add_argument("--dtypes", default="fp16,bf16")
    a = p.parse_args()
    seeds = a.seeds
    mamba = None
    if not a.no_mamba:
        try:
            mamba = import_mamba_ssm().mamba_chunk_scan_combined
        except Unavailable as err:
            print("mamba_ssm:", err)
    impls = ({f"chain {spec}": (_flashssm, _chain(spec)) for spec in a.chain}
             or {"chain": (_flashssm, _Defaults("chain"))})
    if not a.no_parallel:
        impls["parallel"] = (_flashssm, _Defaults("parallel"))
    if mamba is not None:
        impls["mamba_ssm"] = (lambda kw: mamba(kw["x"], kw["dt"], kw["A"], kw["B"], kw["C"], 256, D=kw["D"], z=kw["z"],
                                              dt_bias=kw["dt_bias"], initial_states=kw["initial_states"],
                                              dt_softplus=True, return_final_states=True),
                              contextlib.nullcontext())
    dtypes = [{"fp16": torch.float16, "bf16": torch.bfloat16}[d] for d in a.dtypes.split(",")]
    for dtype in dtypes:
        worst = {}
        for seed in range(seeds):
            torch.manual_seed(seed)
            kw = ssd_inputs(1, 3000, 8, 96, 48, 4, dtype=dtype, device="cuda", D="hp", z=True, dt_bias=True,
                            dt_softplus=True, initial_states=True)
            dy = torch.randn_like(kw["x"], dtype=torch.float32)
            dfinal = torch.randn_like(kw["initial_states"])
            kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
            want = grads(lambda l: ref.ssd_scan_chunked(**l, chunk_size=256), kw64, dy.double(), dfinal.double())
            for name, (call, defaults) in impls.items():
                with defaults:  # (the backward runs inside grads)
                    got = grads(call, kw, dy, dfinal)
                errs = {k: rel_err(got[k], want[k]) for k in want}
                for k, e in errs.items():
                    worst[(name, k)] = max(worst.get((name, k), 0.0), e)
                print(f"{dtype} seed {seed} {name}: " + " ".join(f"d{k} {e:.2e}" for k, e in errs.items()), flush=True)
        for name in impls:
            print(f"{dtype} worst over {seeds} seeds, {name}: "
                  + " ".join(f"d{k} {worst[(name, k)]:.2e}" for k in INPUTS if (name, k) in worst), flush=True)


if __name__ == "__main__":
    main()
