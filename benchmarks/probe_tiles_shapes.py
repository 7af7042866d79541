"""The tiles backward on the GPU test shapes, one at a time, every dtype, each checked for finite gradients and
against the sweeps: a small repro for compute-sanitizer (python benchmarks/probe_tiles_shapes.py [SHAPE_INDEX ...])."""

import sys

import torch

from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward_chain
from tests.helpers import ssd_inputs
from tests.ops.test_ssd_backward import GPU_SHAPES

for index in [int(a) for a in sys.argv[1:]] or range(len(GPU_SHAPES)):
    *dims, chunk = GPU_SHAPES[index]
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        kw = ssd_inputs(*dims, dtype=dtype, device="cuda")
        x, dt, A, B, C = (kw[k] for k in ("x", "dt", "A", "B", "C"))
        d = check_ssd_scan(x, dt, A, B, C, chunk_size=chunk)
        dy = torch.randn_like(x)
        out = {}
        for tiles in (False, True):
            out[tiles] = backward_chain.ssd_backward(d, dy, None, x, dt, A, B, C, tiles=tiles)
            torch.cuda.synchronize()
        diffs = " ".join(f"{n} {float((u.float() - v.float()).norm() / u.float().norm()):.1e}"
                         for n, u, v in zip(("dx", "ddt", "dA", "dB", "dC"), out[False], out[True]))
        print(f"shape {index} {dims} Q{chunk} {dtype}: {diffs}", flush=True)
