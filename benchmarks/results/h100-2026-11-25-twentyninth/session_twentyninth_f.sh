#!/usr/bin/env bash
# Twenty-ninth session, call 6 (review): the Gluon kernel's loop takes its barrier before issuing the next stage's
# cp.async (with D, x was read from that stage after the last barrier: a write-after-read race between warps). The
# Gluon GPU tests, then the A/B against the Triton kernel (benchmarks/ab_gluon_forward.py).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py -k gluon 2>&1 \
  | tee "$OUT/call6-tests-gluon.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 200 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-8x4K --workload 2.7b-32x2K 2>&1 | grep -v -i warn \
  | tee "$OUT/call6-ab-gluon.txt"
