"""Which thread runs ssd_scan's backward in a training call (the autograd engine's CUDA device thread, or the caller),
and the replay steps' host time beside it. Seventieth session, call 9."""
import threading

import torch

import flashssm
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.ssd import autograd as ssd_autograd

seen = []
backward = ssd_autograd.SSDScanFunction.backward


def spy(ctx, *grads):
    seen.append(threading.get_native_id())
    return backward(ctx, *grads)


ssd_autograd.SSDScanFunction.backward = staticmethod(spy)
w = WORKLOADS["train-2.7b-1x2K"]
inp = w.make_inputs("cuda")
leaves = [inp[k].detach().clone().requires_grad_() for k in ("x", "dt", "A", "B", "C")]
for _ in range(3):
    y = flashssm.ssd_scan(*leaves, chunk_size=w.chunk_size)
    torch.autograd.grad(y, leaves, inp["dy"])
torch.cuda.synchronize()
print("main thread", threading.get_native_id(), "backward ran on", sorted(set(seen)))
