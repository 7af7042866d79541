"""Time the selective-scan backward alone (picked configuration) at the given workloads; the kernel variant comes
from FLASHSSM_SCAN_EXPERIMENT (no-dbc.diff: 0 as shipped, 2 without dB/dC, 3 the sums without their atomics)."""
import os
import sys

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, WORKLOADS
from flashssm.ops.selective_scan import scan

n_sms = torch.cuda.get_device_properties(0).multi_processor_count
for name in sys.argv[1:]:
    inp = WORKLOADS[name].make_inputs("cuda")
    t = [inp[k] for k in SCAN_TRAIN_INPUTS]
    b, d, L = inp["u"].shape
    cfg = scan.backward_config(b, d, inp["A"].shape[1], 1, L, n_sms, 2)
    _, _, ckpt = scan.scan_forward(*t, True, ckpt_tile=cfg.chunk)

    def run():
        return scan.scan_backward(inp["dy"], None, *t, True, ckpt=ckpt, ckpt_tile=cfg.chunk)
    run()
    print(f"experiment {os.environ.get('FLASHSSM_SCAN_EXPERIMENT', '0')} {name}: backward {do_bench(run):.3f} ms "
          f"({cfg})", flush=True)
