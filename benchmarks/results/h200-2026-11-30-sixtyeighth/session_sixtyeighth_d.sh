#!/usr/bin/env bash
# Sixty-eighth session, call 4 (call 3 again after its two findings: a prepared call replayed without the TMA launch, which bypasses `_runtime.launch`, so the A/B timed nothing; the xbc layout, rows of 776 elements, failed to compile on cp.async, a blocker bug: now multiples of 16): forward_gluon.TMA (the late publish's x, B and C rows by tensor descriptors instead of
# 20 cp.async a thread a sub-chunk; offline the loop 941 -> 918 instructions, 4 more bar.sync from Triton 3.6's TMA
# lowering). (1) its GPU tests (the same bits as cp.async, own and xbc layouts, stored states, fp16) and the Gluon
# forward tests (the kernel's new arguments); (2) A/B of the forward alone and (3) of the training call, alternating
# in one process. The TMA form launches through Triton's own launcher for now (`_run_gluon`).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short \
  -n 14 tests/ops/test_ssd_forward.py -k "tma or gpu_gluon_forward and late" > "$OUT/tests.txt" 2>&1; echo "== tests rc $?";
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests.txt" | tail -12)
export PYTHONPATH=$PWD
timeout 150 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.TMA --workload 2.7b-8x4K \
  --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --workload 2.7b-8x4K-fp16 --rounds 5 > "$OUT/ab-forward.txt" 2>&1
echo "== ab forward rc $?"; cat "$OUT/ab-forward.txt" | grep -v Warn | tail -6
timeout 150 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.TMA --workload 8x4K --rounds 3 \
  --forward > "$OUT/ab-train.txt" 2>&1
echo "== ab train rc $?"; grep -v Warn "$OUT/ab-train.txt" | tail -12
