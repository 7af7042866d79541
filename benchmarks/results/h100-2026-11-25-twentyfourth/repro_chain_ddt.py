"""Replays test_gradients_match_reference[chain-B1-L257-H4-P64-N128-G1] with FLASHSSM_TEST_SEED=360355933 (failed once
on the GPU in call 3: ddt 2.97e-2 relative): the same inputs, the chain form's sweeps five times (a race would give
different errors), and the tokens whose ddt is furthest from float64, with their processed dt against dt_limit."""
import sys
import zlib

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
import flashssm  # noqa: E402
from flashssm.ops.ssd import backward, backward_chain, reference as ref  # noqa: E402
from tests.helpers import ssd_inputs  # noqa: E402

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 360355933
nodeid = "tests/ops/test_ssd_backward.py::test_gradients_match_reference[chain-B1-L257-H4-P64-N128-G1]"
backward.DEFAULT_FORM = "chain"
backward_chain.TILES = False
torch.manual_seed(seed ^ zlib.crc32(nodeid.encode()))
kw = ssd_inputs(1, 257, 4, 64, 128, 1, dtype=torch.float32, device="cuda", D="hp", z=True, dt_bias=True,
                dt_softplus=True, initial_states=True)
kw["dt_limit"] = (1e-3, 0.5)
dy = torch.randn_like(kw["x"])
dfinal = torch.randn(1, 4, 64, 128, device="cuda")
names = ("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states")


def grads(fn, kw, dy, dfinal, **o):
    leaves = {k: (v.detach().clone().requires_grad_() if k in names else v) for k, v in kw.items()}
    y, fin = fn(**leaves, return_final_states=True, **o) if fn is flashssm.ssd_scan else fn(**leaves, **o)
    torch.autograd.backward([y, fin], [dy.to(y.dtype), dfinal.to(fin.dtype)])
    return {k: leaves[k].grad for k in names if k in leaves}


kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
want = grads(ref.ssd_scan_chunked, kw64, dy.double(), dfinal.double(), chunk_size=64)
for rep in range(5):
    got = grads(flashssm.ssd_scan, kw, dy, dfinal, chunk_size=64)
    errs = {k: float((got[k].double() - want[k]).norm() / want[k].norm()) for k in got}
    print(f"run {rep}: " + " ".join(f"d{k} {e:.2e}" for k, e in errs.items()), flush=True)
d = (got["dt"].double() - want["dt"]).abs().flatten()
v64 = F.softplus(kw64["dt"] + kw64["dt_bias"]).flatten()
v32 = F.softplus(kw["dt"] + kw["dt_bias"]).flatten()
top = d.topk(6).indices
for i in top.tolist():
    t, h = divmod(i, 4)
    print(f"token {t} head {h}: |ddt diff| {d[i]:.3e} (want {want['dt'].flatten()[i]:.3e}, got "
          f"{got['dt'].flatten()[i]:.3e}); dt processed fp64 {v64[i]:.9f} fp32 {v32[i]:.9f}")
print("ddt norm", float(want["dt"].norm()))
