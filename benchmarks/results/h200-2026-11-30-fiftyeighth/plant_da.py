"""The fuzzer's power on dA: ssd_scan cases with A's gradient scaled by FACTOR (a planted error), counting the 16-bit
cases with gradients whose dA check catches it (fifty-eighth session, notes/hardening.md).

    PYTHONPATH=. python3 benchmarks/results/h200-2026-11-30-fiftyeighth/plant_da.py FACTOR SEED CASES
"""
import os, sys, random
os.environ["TRITON_INTERPRET"] = "1"
import torch
from tests.fuzz import fuzz
import flashssm

factor = float(sys.argv[1])
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a): return a.view_as(a)
    @staticmethod
    def backward(ctx, g): return g * factor
real = flashssm.ssd_scan
def planted(x, dt, A, B, C, **k):
    return real(x, dt, Scale.apply(A), B, C, **k)
fuzz.flashssm.ssd_scan = planted
caught = total = 0
rng = random.Random(int(sys.argv[2]))
for i in range(int(sys.argv[3])):
    cs = rng.randrange(2**32)
    desc, fails = fuzz.run_case("ssd_scan", cs, torch.device("cpu"))
    if desc.get("grads") != "True" or desc["dtype"] == "torch.float32":
        continue
    total += 1
    hit = any(f.startswith("dA") for f in fails)
    caught += hit
    print(cs, desc["dtype"], desc["extreme"], "caught" if hit else "MISSED", fails[:1])
print(f"caught {caught} of {total}")
