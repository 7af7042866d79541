"""Forty-seventh session, call 4: the packed backward of two equal 16384-token sequences (2.8B shape), which printed
nothing in calls 2 and 3 (100 s and 200 s limits, `ab_packed_scan_bwd.py --scan 2x16384`), while the ragged packing
of the same tokens and one 16384-token sequence ran. Compile or hang? Each step timed, synchronised; faulthandler
dumps the stack if a step passes 200 s (a hang in a kernel shows as a wait in synchronize, a compile in triton)."""
import faulthandler
import sys
import time

import torch

import flashssm
from flashssm.bench.workloads import ScanWorkload

faulthandler.dump_traceback_later(200, exit=True)
t = time.time()


def step(msg):
    torch.cuda.synchronize()
    print(f"{time.time() - t:7.1f} s  {msg}", flush=True)


inp = ScanWorkload("packed", 2, 16384, dstate=16).make_inputs("cuda")
flat = {k: (v.permute(1, 0, 2).reshape(1, v.shape[1], -1).contiguous() if k in ("u", "delta", "z", "B", "C") else v)
        for k, v in inp.items() if k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")}
flat = {k: v.detach().clone().requires_grad_() for k, v in flat.items()}
cu = torch.tensor([0, 16384, 32768], dtype=torch.int32, device="cuda")
dy = torch.randn_like(flat["u"])
step("inputs")
for i in range(3):
    for v in flat.values():
        v.grad = None
    y = flashssm.selective_scan(**flat, delta_softplus=True, cu_seqlens=cu)
    step(f"forward {i}")
    y.backward(dy)
    step(f"backward {i}")
ref = {k: v.grad.clone() for k, v in flat.items()}
# the same two sequences as a dense batch of 2: the gradients must agree
dense = {k: (v.detach().reshape(v.shape[1], 2, -1).permute(1, 0, 2).contiguous() if k in ("u", "delta", "z", "B", "C")
             else v.detach()).requires_grad_() for k, v in flat.items()}
yd = flashssm.selective_scan(**dense, delta_softplus=True)
yd.backward(dy.reshape(dy.shape[1], 2, -1).permute(1, 0, 2))
step("dense")
err = (yd.permute(1, 0, 2).reshape(y.shape) - y).abs().max().item()
du = (dense["u"].grad.permute(1, 0, 2).reshape(ref["u"].shape) - ref["u"]).abs().max().item()
print(f"y max|diff| {err:.2e}, du max|diff| {du:.2e}")
sys.exit(0)
