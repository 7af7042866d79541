"""dA of the fuzzer's decay80 ssd_scan cases (16-bit, with gradients) against both of its cancellation bounds: the
decay80 one in use and the terms bound the other 16-bit cases take (fifty-eighth session, notes/hardening.md). Needs
the fuzzer instrumented by decay80-log.diff (a copy of tests/, patched, first on the import path); one line a case:

    mkdir -p /tmp/t58 && cp -r tests /tmp/t58/ && patch -d /tmp/t58 -p1 < RESULTS/decay80-log.diff
    PYTHONPATH=/tmp/t58:. python3 RESULTS/decay80_log.py SEED CASES [DEVICE]

(RESULTS: benchmarks/results/h200-2026-11-30-fiftyeighth)

(on the CPU set TRITON_INTERPRET=1 first). err/terms is dA's error in units of the terms bound (2^-11 sum |P_ij| S_ij).
"""
import os
import random
import sys

if len(sys.argv) < 4 or sys.argv[3] == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"
import torch  # noqa: E402

from tests.fuzz import fuzz  # noqa: E402

rng = random.Random(int(sys.argv[1]))
device = torch.device(sys.argv[3] if len(sys.argv) > 3 else "cpu")
n = 0
while n < int(sys.argv[2]):
    case = rng.randrange(2**32)
    fuzz.LOG.clear()
    desc, fails = fuzz.run_case("ssd_scan", case, device)
    if desc.get("extreme") != "decay80" or desc.get("grads") != "True" or desc["dtype"] == "torch.float32":
        continue
    n += 1
    for d, loose, terms, want, ratio, err in fuzz.LOG:
        print(f"{case} {desc['dtype']} err {d:.2e} loose {loose:.2e} terms {terms:.2e} |dA| {want:.2e} "
              f"err/terms {ratio:.3f} rel {err:.2e} {fails[:1]}", flush=True)
