"""Spread of ssd_scan's gradient errors over random inputs, against the float64 reference, for flashssm's
backward forms and mamba_ssm's (when importable) on the same inputs: is a test failing near its
tolerance a flaky draw, a regression, or the method's precision?

    PYTHONPATH=. python3 -m benchmarks.grad_error_spread [SEEDS]

Shapes: test_gpu_real_shapes' B1-L3000-H8-P96-N48-G4 at chunk 256 with every option (D per headdim, z,
dt_bias, softplus, initial states, a final-state gradient), fp16 and bf16. Prints, per seed and
implementation, the relative error of each gradient; then the worst over seeds."""

import sys

import torch

import flashssm
from flashssm.bench.impls import Unavailable, import_mamba_ssm
from flashssm.ops.ssd import backward
from flashssm.ops.ssd import reference as ref
from tests.helpers import rel_err, ssd_inputs

INPUTS = ("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states")


def grads(call, kw, dy, dfinal):
    leaves = {k: (v.detach().clone().requires_grad_() if torch.is_tensor(v) and v.is_floating_point() else v)
              for k, v in kw.items()}
    y, final = call(leaves)
    torch.autograd.backward([y, final], [dy.to(y.dtype), dfinal.to(final.dtype)])
    return {k: leaves[k].grad for k in INPUTS if k in leaves}


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    try:
        mamba = import_mamba_ssm().mamba_chunk_scan_combined
    except Unavailable as err:
        print("mamba_ssm:", err)
        mamba = None
    impls = {
        "chain": lambda kw: flashssm.ssd_scan(**kw, chunk_size=256, return_final_states=True),
        "parallel": lambda kw: flashssm.ssd_scan(**kw, chunk_size=256, return_final_states=True),
    }
    if mamba is not None:
        impls["mamba_ssm"] = lambda kw: mamba(kw["x"], kw["dt"], kw["A"], kw["B"], kw["C"], 256, D=kw["D"], z=kw["z"],
                                              dt_bias=kw["dt_bias"], initial_states=kw["initial_states"],
                                              dt_softplus=True, return_final_states=True)
    for dtype in (torch.float16, torch.bfloat16):
        worst = {}
        for seed in range(seeds):
            torch.manual_seed(seed)
            kw = ssd_inputs(1, 3000, 8, 96, 48, 4, dtype=dtype, device="cuda", D="hp", z=True, dt_bias=True,
                            dt_softplus=True, initial_states=True)
            dy = torch.randn_like(kw["x"], dtype=torch.float32)
            dfinal = torch.randn_like(kw["initial_states"])
            kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
            want = grads(lambda l: ref.ssd_scan_chunked(**l, chunk_size=256), kw64, dy.double(), dfinal.double())
            for name, call in impls.items():
                backward.DEFAULT_FORM = "parallel" if name == "parallel" else "chain"
                got = grads(call, kw, dy, dfinal)
                errs = {k: rel_err(got[k], want[k]) for k in want}
                for k, e in errs.items():
                    worst[(name, k)] = max(worst.get((name, k), 0.0), e)
                print(f"{dtype} seed {seed} {name}: " + " ".join(f"d{k} {e:.2e}" for k, e in errs.items()), flush=True)
        backward.DEFAULT_FORM = "chain"
        for name in impls:
            print(f"{dtype} worst over {seeds} seeds, {name}: "
                  + " ".join(f"d{k} {worst[(name, k)]:.2e}" for k in INPUTS if (name, k) in worst), flush=True)


if __name__ == "__main__":
    main()
