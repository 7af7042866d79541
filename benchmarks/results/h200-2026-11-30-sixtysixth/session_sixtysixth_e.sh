#!/usr/bin/env bash
# Sixty-sixth session, call 5 (about 200 s): the two-chain kernel with its loads two sub-chunks ahead (3 stages)
# against one ahead (2 stages) and against the one-chain kernel; a smoke run of each first (the same bits).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
timeout 90 python3 - > "$OUT/smoke.txt" 2>&1 <<'PY'
import torch, flashssm
from flashssm.ops.ssd import forward_gluon
torch.manual_seed(0)
for l in (1000, 64, 130, 4096):
    b, h, p, n = 2, 4, 64, 128
    x = torch.randn(b, l, h, p, device="cuda", dtype=torch.bfloat16)
    dt = torch.nn.functional.softplus(torch.randn(b, l, h, device="cuda") - 4)
    A = -torch.rand(h, device="cuda") - 0.5
    B = torch.randn(b, l, 1, n, device="cuda", dtype=torch.bfloat16)
    C = torch.randn(b, l, 1, n, device="cuda", dtype=torch.bfloat16)
    outs = {}
    for pair, ahead in ((False, 1), (True, 1), (True, 2)):
        forward_gluon.PAIR, forward_gluon.PAIR_AHEAD = pair, ahead
        outs[pair, ahead] = flashssm.ssd_scan(x, dt, A, B, C, chunk_size=256, return_final_states=True)
        torch.cuda.synchronize()
    print(l, "same bits", [all(torch.equal(a, c) for a, c in zip(outs[False, 1], o)) for o in outs.values()])
PY
echo "== smoke rc $?"; tail -5 "$OUT/smoke.txt"
timeout 120 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PAIR_AHEAD --value 1 --value 2 \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --rounds 5 > "$OUT/ab-ahead.txt" 2>&1
echo "== ab ahead rc $?"; grep -v -i warn "$OUT/ab-ahead.txt" | tail -4
timeout 120 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PAIR \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --rounds 5 > "$OUT/ab-pair.txt" 2>&1
echo "== ab pair rc $?"; grep -v -i warn "$OUT/ab-pair.txt" | tail -4
