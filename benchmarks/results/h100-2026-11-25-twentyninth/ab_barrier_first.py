"""Call 7 (review): the Gluon kernel before (8b348b7: cp.async issued, then the barrier) and after (the barrier, then
cp.async) the stage-reuse fix, in one process, alternating; both through forward._run_gluon's arguments."""
import importlib.util
import os
import sys

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward, forward_gluon

spec = importlib.util.spec_from_file_location(  # (git show 8b348b7:flashssm/ops/ssd/forward_gluon.py)
    "forward_gluon_old", os.path.join(os.path.dirname(__file__), "forward_gluon_before_fix.py"))
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
for name in sys.argv[1:] or ["2.7b-8x4K", "2.7b-32x2K"]:
    inp = WORKLOADS[name].make_inputs("cuda")
    dims = check_ssd_scan(**inp, chunk_size=256)
    cfg = forward.pick_config(dims, inp["x"].dtype, inp["x"].device)
    kernels = {"before": old._ssd_fwd_gluon_kernel, "after": forward_gluon._ssd_fwd_gluon_kernel}
    fns = {}
    for k, kern in kernels.items():
        def fn(kern=kern):
            forward_gluon._ssd_fwd_gluon_kernel = kern
            return forward.launch(dims, **inp, config=cfg)[0]
        fns[k] = fn
    ys = {k: f() for k, f in fns.items()}
    times = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            times[k].append(do_bench(f, warmup=25, rep=200, return_mode="median"))
    med = {k: sorted(t)[2] for k, t in times.items()}
    print(f"{name}: before {med['before']:.4f} ms, after {med['after']:.4f} ms ({med['after'] / med['before'] - 1:+.1%}),"
          f" y equal {torch.equal(ys['before'], ys['after'])}", flush=True)
forward_gluon._ssd_fwd_gluon_kernel = kernels["after"]
