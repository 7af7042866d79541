"""Eighty-third session, call 5: the bench's 1 x 128K row did not move with the gathered last spans (2.493 ms against
2.492 before) where ab_forward_flag (final states returned) gave -4.9 %. The bench's call returns no final states.
Here both calls, the switch on and off, alternating, with each launch's grid printed once."""
import torch
from triton.testing import do_bench

import flashssm
from flashssm import _runtime
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.ssd import forward

seen = set()
real = _runtime.launch


def spy(kernel, grid, *a, **kw):
    key = (getattr(kernel, "__name__", str(kernel)), tuple(grid), kw.get("TAILS"), kw.get("CHUNK"))
    if key not in seen:
        seen.add(key)
        print("launch", key, flush=True)
    return real(kernel, grid, *a, **kw)


_runtime.launch = spy
for name in ("2.7b-1x128K", "2.7b-1x32K"):
    inp = WORKLOADS[name].make_inputs("cuda")
    for final in (False, True):
        times = {False: [], True: []}
        for _ in range(3):
            for tails in (False, True):
                forward.ONE_WAVE_TAILS = tails
                call = lambda: flashssm.ssd_scan(inp["x"], inp["dt"], inp["A"], inp["B"], inp["C"], chunk_size=256,  # noqa
                                                 return_final_states=final)
                times[tails].append(do_bench(call, warmup=25, rep=200, return_mode="median"))
        med = {k: sorted(v)[1] for k, v in times.items()}
        print(f"{name} final {final}: off {med[False]:.4f} on {med[True]:.4f} ({med[True] / med[False] - 1:+.1%})",
              flush=True)
