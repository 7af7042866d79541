"""The fuzzer's power on dA: ssd_scan cases with A's gradient scaled by FACTOR (a planted error), counting the 16-bit
cases with gradients whose dA check catches it (fifty-eighth session, notes/hardening.md).

    PYTHONPATH=. python3 benchmarks/results/h200-2026-11-30-fiftyeighth/plant_da.py FACTOR SEED CASES [DEVICE]
"""
import os
import random
import sys

DEVICE = sys.argv[4] if len(sys.argv) > 4 else "cpu"
if DEVICE == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
import torch  # noqa: E402

import flashssm  # noqa: E402
from tests.fuzz import fuzz  # noqa: E402

factor = float(sys.argv[1])


class Scale(torch.autograd.Function):
    """The identity forward; its backward scales the gradient by `factor`."""

    @staticmethod
    def forward(ctx, a):
        return a.view_as(a)

    @staticmethod
    def backward(ctx, g):
        return g * factor


real = flashssm.ssd_scan


def planted(x, dt, A, B, C, **k):
    return real(x, dt, Scale.apply(A), B, C, **k)


fuzz.flashssm.ssd_scan = planted
caught = total = 0
rng = random.Random(int(sys.argv[2]))
for _ in range(int(sys.argv[3])):
    case = rng.randrange(2**32)
    desc, fails = fuzz.run_case("ssd_scan", case, torch.device(DEVICE))
    if desc.get("grads") != "True" or desc["dtype"] == "torch.float32":
        continue
    total += 1
    hit = any(f.startswith("dA") for f in fails)
    caught += hit
    print(case, desc["dtype"], desc["extreme"], "caught" if hit else "MISSED", fails[:1], flush=True)
print(f"caught {caught} of {total}")
