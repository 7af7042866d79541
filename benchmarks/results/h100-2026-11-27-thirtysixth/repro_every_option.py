"""Call 10's failing draw of test_every_option[Dhp-z0-bias1-sp0-lim0-init0] (seed 989523223) on the GPU: dA per head
against float64, for the sweeps (the default at this size) and the tiles, and each head's cancelling size."""
import sys
import zlib

import torch

import flashssm
from flashssm.ops.ssd import backward_chain
from flashssm.ops.ssd import reference as ref
from tests.helpers import rel_err, ssd_inputs
from tests.ops import test_ssd_backward as T

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 989523223
node = "tests/ops/test_ssd_backward.py::test_every_option[Dhp-z0-bias1-sp0-lim0-init0]"
torch.manual_seed(seed ^ zlib.crc32(node.encode()))
kw = ssd_inputs(2, 45, 4, 32, 16, 2, dtype=torch.float32, device="cuda", D="hp", z=False, dt_bias=True,
                dt_softplus=False, initial_states=False)
dy = torch.randn_like(kw["x"], dtype=torch.float32)
dfinal = torch.randn(2, 4, 32, 16, device="cuda")
kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
y64, final64, want = T.gradients(ref.ssd_scan_chunked, kw64, dy.double(), dfinal.double(), chunk_size=16,
                                 cu_seqlens=None)
size_a, _ = T.head_cancelling_sizes(kw64, dy, dfinal, y64, final64)
print("dA float64", [f"{v:.6g}" for v in want["A"].tolist()], "cancelling", [f"{v:.4g}" for v in size_a.tolist()])
for form, tiles in (("sweeps", False), ("tiles", True)):
    backward_chain.use_tiles = lambda dims, device, t=tiles: t
    y, _, got = T.gradients(flashssm.ssd_scan, kw, dy, dfinal, chunk_size=16, cu_seqlens=None, state_dtype=None)
    print(form, "dA", [f"{v:.6g}" for v in got["A"].tolist()], "rel", f"{rel_err(got['A'], want['A']):.2e}",
          "ddt rel", f"{rel_err(got['dt'], want['dt']):.2e}", "ddt_bias rel",
          f"{rel_err(got['dt_bias'], want['dt_bias']):.2e}")
