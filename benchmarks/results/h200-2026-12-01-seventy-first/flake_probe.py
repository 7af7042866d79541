"""Seventy-first session: test_an_fp16_training_call_replays_its_scaled_states failed once on the GPU (dB of the
replayed call not the whole path's bits). Is that the atomic sums' order (dB and dC are float atomics over a group's
heads and the paths launch), or the replay? Repeat the test's comparison with FEWER_TORCH_CALLS on and off; print how
often each gradient differs and by how much (relative to its largest value). Run from a tree copy with PYTHONPATH=.
"""
import sys

import torch

from flashssm import _runtime
from flashssm.ops.ssd import backward, backward_chain
from tests.test_prepared import _grads, _incoming, _inputs, _no_replays

backward.DEFAULT_FORM = "chain"
backward_chain.use_tiles = lambda dims, device, *_: True
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
shape = (2, 48, 4, 32, 16, 2)
for fewer in (True, False):
    backward_chain.FEWER_TORCH_CALLS = fewer
    seen = {}
    for rep in range(reps):
        _runtime.clear_prepared()
        torch.manual_seed(1000 + rep)
        kw, call = _inputs("cuda", dtype=torch.float16, shape=shape, D="h", dt_softplus=True)
        _grads(kw, call, *_incoming(kw, call, "cuda"))
        new, _ = _inputs("cuda", dtype=torch.float16, shape=shape, D="h", dt_softplus=True)
        incoming = _incoming(new, call, "cuda")
        _, grads = _grads(new, call, *incoming)
        with _no_replays():
            _, whole = _grads(new, call, *incoming)
        _, again = _grads(new, call, *incoming)  # (the replay twice: atomics' order alone)
        for k in grads:
            d = (grads[k].float() - whole[k].float()).abs().max().item() / max(whole[k].float().abs().max().item(), 1e-30)
            d2 = (grads[k].float() - again[k].float()).abs().max().item() / max(whole[k].float().abs().max().item(), 1e-30)
            s = seen.setdefault(k, [0, 0.0, 0, 0.0])
            s[0] += d > 0
            s[1] = max(s[1], d)
            s[2] += d2 > 0
            s[3] = max(s[3], d2)
    print(f"FEWER_TORCH_CALLS={fewer}, {reps} reps: grad: replay vs whole (times differing, largest rel), "
          "replay vs replay")
    for k, (n, m, n2, m2) in seen.items():
        print(f"  d{k:8s} {n:3d}  {m:.2e}   {n2:3d}  {m2:.2e}")
