#!/usr/bin/env bash
# Sixty-sixth session, call 3 (about 480 s): after call 2 (a branchless loop, 2 stages): the late form's two-chain kernel (`_ssd_fwd_gluon_pair_kernel`: two
# chains of a group a program, B and C loaded once into a ring both warp partitions fill). A smoke run, its GPU tests
# (the same bits as the one-chain kernel) and the forward's A/B (PAIR off / on, alternating in one process).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD
timeout 90 python3 - > "$OUT/smoke.txt" 2>&1 <<'PY'
import torch, flashssm
from flashssm.ops.ssd import forward_gluon
torch.manual_seed(0)
b, l, h, p, n = 2, 1000, 4, 64, 128
x = torch.randn(b, l, h, p, device="cuda", dtype=torch.bfloat16)
dt = torch.nn.functional.softplus(torch.randn(b, l, h, device="cuda") - 4)
A = -torch.rand(h, device="cuda") - 0.5
B = torch.randn(b, l, 1, n, device="cuda", dtype=torch.bfloat16)
C = torch.randn(b, l, 1, n, device="cuda", dtype=torch.bfloat16)
outs = {}
for pair in (False, True):
    forward_gluon.PAIR = pair
    outs[pair] = flashssm.ssd_scan(x, dt, A, B, C, chunk_size=256, return_final_states=True)
    torch.cuda.synchronize()
print("same bits", all(torch.equal(a, c) for a, c in zip(outs[False], outs[True])),
      [(a.float() - c.float()).abs().max().item() for a, c in zip(outs[False], outs[True])])
PY
echo "== smoke rc $?"; tail -5 "$OUT/smoke.txt"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 200 python3 -m pytest -x -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_ssd_forward.py \
  -k "gpu_gluon_pair" > "$OUT/tests-pair.txt" 2>&1; echo "== tests pair rc $?"; tail -5 "$OUT/tests-pair.txt") &
(cd /tmp/xrepo && timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_ssd_forward.py \
  -k "gpu_gluon_forward and late and not fp16 or gpu_gluon_public_path" > "$OUT/tests-late.txt" 2>&1; \
  echo "== tests late rc $?"; tail -5 "$OUT/tests-late.txt") &
wait
timeout 150 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PAIR --workload 2.7b-8x4K \
  --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --rounds 5 > "$OUT/ab-pair.txt" 2>&1
echo "== ab rc $?"; grep -v -i warn "$OUT/ab-pair.txt" | tail -6
timeout 100 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PAIR_STAGES --value 2 --value 3 \
  --workload 2.7b-8x4K --workload 2.7b-8x4K-layer --rounds 5 > "$OUT/ab-stages.txt" 2>&1
echo "== ab stages rc $?"; grep -v -i warn "$OUT/ab-stages.txt" | tail -4
