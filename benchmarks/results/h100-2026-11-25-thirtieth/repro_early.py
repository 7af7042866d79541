"""One Gluon early-publish forward call on a test shape, checked against float64 (run under compute-sanitizer to find
an access fault): python3 repro_early.py B L H P N G Q [opts]"""
import sys

import torch

sys.path.insert(0, ".")
import flashssm  # noqa: E402
from flashssm.ops.ssd import reference as ref  # noqa: E402
from tests.helpers import rel_err, ssd_inputs, to_float64  # noqa: E402

b, l, h, p, n, g, q = (int(a) for a in sys.argv[1:8])
opts = sys.argv[8] if len(sys.argv) > 8 else "all"
extra = dict(D="hp", z=True, dt_bias=True, dt_softplus=True, initial_states=True) if opts == "all" else {}
torch.manual_seed(0)
kw = ssd_inputs(b, l, h, p, n, g, dtype=torch.bfloat16, device="cuda", **extra)
y, hf = flashssm.ssd_scan(**kw, chunk_size=q, return_final_states=True)
torch.cuda.synchronize()
y_ref, h_ref = ref.ssd_scan_chunked(**to_float64(kw), chunk_size=q)
print(sys.argv[1:], "y", rel_err(y, y_ref), "h", rel_err(hf, h_ref), flush=True)
