#!/usr/bin/env bash
# Seventeenth session, ninth GPU call: the steep-decay test at dt A = -3 a token (default tolerance) on the GPU, over
# several seeds.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for s in 1 2 3 4 461042436; do
  FLASHSSM_TEST_SEED=$s timeout 90 python3 -m pytest -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
    -k steep_decays 2>&1 | grep -E "passed|failed" | sed "s/^/seed $s: /"
done | tee "$OUT/call9-steep.txt"
