"""The tiles' dA and ddt where a chunk decays away, fp32 under the interpreter, tiles forced: one-token sequences whose
initial states decay by 6e-6, dt 3 everywhere, a fifth of the tokens at dt A = -80; four draws each, against the float64
chunked reference (sixtieth session, notes/ssd_backward.md: before and after `tiles-own-pairs.diff`).

    PYTHONPATH=. python3 benchmarks/results/h200-2026-11-30-sixtieth/probe_tiles_da.py
"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import functools  # noqa: E402

import torch  # noqa: E402
import flashssm  # noqa: E402
from flashssm.ops.ssd import backward, reference as ref  # noqa: E402
from tests.helpers import ssd_inputs, rel_err  # noqa: E402
from tests.ops.test_ssd_backward import gradients  # noqa: E402
backward.ssd_backward = functools.partial(backward.ssd_backward, form="chain", tiles=True)
for name, (b, l, h, p, n, dtfn, chunk) in {
        "one-token seqs, decay 6e-6": (4, 1, 2, 16, 32, lambda A, dt: (12.0 / A.abs()).expand_as(dt), 32),
        "dt 3 (dt A to -36)": (2, 103, 4, 32, 16, lambda A, dt: torch.full_like(dt, 3.0), 64),
        "some tokens at dt A = -80": (2, 90, 3, 16, 16, lambda A, dt: torch.where(torch.rand_like(dt) < 0.2,
                                                                                   80.0 / A.abs(), dt), 32)}.items():
    for seed in range(4):
        torch.manual_seed(seed)
        kw = ssd_inputs(b, l, h, p, n, 1, dtype=torch.float32, device="cpu", D="h", initial_states=True)
        kw["dt"] = dtfn(kw["A"], kw["dt"]).contiguous()
        dy, dfinal = torch.randn_like(kw["x"]), torch.randn(b, h, p, n)
        got = gradients(flashssm.ssd_scan, kw, dy, dfinal, chunk_size=chunk)[2]
        k64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
        want = gradients(ref.ssd_scan_chunked,
                         k64, dy.double(), dfinal.double(), chunk_size=chunk)[2]
        print(f"{name:28s} seed {seed}: dA {rel_err(got['A'], want['A']):.2e}  dt {rel_err(got['dt'], want['dt']):.2e}"
              f"  x {rel_err(got['x'], want['x']):.2e}", flush=True)
