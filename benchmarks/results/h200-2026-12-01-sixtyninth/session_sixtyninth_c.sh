#!/usr/bin/env bash
# Sixty-ninth session, call 3 (one H200, ~330 s): the late publish in balanced pieces (`forward_gluon.PIECES`, a
# program a slot sweeping its share of the chains, by TMA). Its GPU tests (the same bits as the waves with fp32
# states; every TMA test again), then the A/B against the default (the waves; the forward alone by cp.async) with each
# kernel's time, the forward alone and the training call at 8 x 4K.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 240 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider --tb=short -n 8 \
  tests/ops/test_ssd_forward.py -k "pieces or tma" > "$OUT/tests-pieces.txt" 2>&1)
echo "tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests-pieces.txt" | tail -15
PYTHONPATH=. timeout 150 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PIECES --workload 2.7b-8x4K \
  --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --workload 2.7b-8x4K-fp16 --rounds 5 --kernels \
  > "$OUT/ab-pieces-forward.txt" 2>&1
grep -v Warn "$OUT/ab-pieces-forward.txt" | grep -v "_warn_once\|Activity\|cuLaunch\|cudaDevice"
PYTHONPATH=. timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.PIECES --workload 8x4K \
  --rounds 5 --kernel _ssd_fwd_gluon_kernel > "$OUT/ab-pieces-train.txt" 2>&1
grep -v "Warn\|_warn_once" "$OUT/ab-pieces-train.txt" | tail -12
