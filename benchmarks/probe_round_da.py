"""dA's and dt_bias's error in the chain form's product modes over seeds, on test_chain_product_modes' inputs.

    python benchmarks/probe_round_da.py [SEEDS] [--launch sweeps|tiles]

Per seed and mode: the relative error the test checks (norm of the difference over the norm of the float64
gradient), and the largest error over heads in units of the cancelling terms' size (tests' `cancelling_size`, per
head), which does not depend on how small a draw's dA happens to be. The distribution over seeds says which of the
two a test can bound without flakes.
"""
import argparse
import functools

import torch

import flashssm
from flashssm.ops.ssd import backward, reference as ref
from tests.helpers import rel_err, ssd_inputs
from tests.ops.test_ssd_backward import gradients, head_cancelling_sizes

p = argparse.ArgumentParser()
p.add_argument("seeds", type=int, nargs="?", default=8)
p.add_argument("--launch", choices=("sweeps", "tiles"), default="sweeps")
p.add_argument("--modes", default="ROUND,SPLIT,TF32")
a = p.parse_args()

dev = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.bfloat16 if dev == "cuda" else torch.float16
seqlen, chunk = (1500, 256) if dev == "cuda" else (150, 64)
real = backward.ssd_backward
rows = {m: {"A": [], "dt_bias": [], "A_norm": [], "dt_bias_norm": []} for m in a.modes.split(",")}
for seed in range(a.seeds):
    torch.manual_seed(seed)
    kw = ssd_inputs(2, seqlen, 4, 32, 16, 2, dtype=dtype, device=dev, D="h", z=True, dt_bias=True, dt_softplus=True,
                    initial_states=True)
    dy = torch.randn_like(kw["x"], dtype=torch.float32)
    dfinal = torch.randn(2, 4, 32, 16, device=dev)
    kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
    y64, final64, want = gradients(ref.ssd_scan_chunked, kw64, dy.double(), dfinal.double(), chunk_size=chunk)
    size_A, size_bias = head_cancelling_sizes(kw64, dy, dfinal, y64, final64)
    out = []
    for mode in rows:
        backward.ssd_backward = functools.partial(real, form="chain", mode=getattr(backward, mode),
                                                  tiles=a.launch == "tiles")
        _, _, got = gradients(flashssm.ssd_scan, kw, dy, dfinal, chunk_size=chunk)
        r = rows[mode]
        r["A"].append(rel_err(got["A"], want["A"]))
        r["dt_bias"].append(rel_err(got["dt_bias"], want["dt_bias"]))
        r["A_norm"].append(float(((got["A"].double() - want["A"]).abs() / size_A).max()))
        r["dt_bias_norm"].append(float(((got["dt_bias"].double() - want["dt_bias"]).abs() / size_bias).max()))
        out.append(f"{mode}: dA {r['A'][-1]:.3e} ({r['A_norm'][-1]:.2e} of its terms) "
                   f"dt_bias {r['dt_bias'][-1]:.3e} ({r['dt_bias_norm'][-1]:.2e})")
    backward.ssd_backward = real
    print(f"seed {seed}: " + " | ".join(out), flush=True)
for mode, r in rows.items():
    print(f"{mode} ({a.launch}), over {a.seeds} seeds: " + ", ".join(
        f"{k} max {max(v):.3e} median {sorted(v)[len(v) // 2]:.3e}" for k, v in r.items()))
