"""The fp16 forward's accuracy on the bench's inputs cast to fp16 (x, B, C; dt, A, D fp32): the Gluon kernel's fp16
form and the Triton kernel's against float64, as flashssm bench reports (rel. L2 error, share within 1e-3 and 1 %),
and the cost of rounding the float64 result itself to fp16. Sixty-first session, call 3.

    PYTHONPATH=. python3 benchmarks/results/h200-2026-11-30-sixtyfirst/fp16_accuracy.py
"""
import dataclasses

import torch

from flashssm.bench.measure import accuracy
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward
from flashssm.ops.ssd import reference as ref

for name in ("accuracy-2x1K", "2.7b-8x4K", "2.7b-1x32K"):
    w = WORKLOADS[name]
    inp = {k: v.half() if torch.is_tensor(v) and v.dtype == torch.bfloat16 else v
           for k, v in w.make_inputs("cuda").items()}
    dims = check_ssd_scan(**inp, chunk_size=w.chunk_size)
    cfg = forward.pick_config(dims, torch.float16, inp["x"].device)
    y_g, _, _, k_g = forward.launch(dims, **inp, config=cfg)
    y_t, _, _, k_t = forward.launch(dims, **inp, config=dataclasses.replace(cfg, gluon=False))
    names = [getattr(k, "name", None) or k.metadata.name for k in (k_g, k_t)]
    y_ref, _ = ref.ssd_scan_chunked(**{k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v
                                       for k, v in inp.items()}, chunk_size=w.chunk_size)
    for label, y in (("gluon", y_g), ("triton", y_t), ("float64 rounded", y_ref.half())):
        a = accuracy(y, y_ref, torch.float16)
        print(f"{name} {label:16s} rel {a.rel_err:.3e}  within 1e-3 {a.within_1e3:.4%}  within 1% {a.within_1pct:.4%}"
              f"  nan {a.nan}")
    print(f"  kernels: {names}; gluon vs triton max |diff| {(y_g.float() - y_t.float()).abs().max().item():.2e}",
          flush=True)
    del y_ref
    torch.cuda.empty_cache()
