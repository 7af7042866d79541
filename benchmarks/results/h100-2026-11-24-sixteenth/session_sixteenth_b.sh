#!/usr/bin/env bash
# Sixteenth session, second GPU call: the preparation launch as picked (early publish and the state recompute),
# A/B with the state recompute and the training call; the SSD forward and backward GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 330 python3 benchmarks/ab_pre_decays.py 3 2>&1 | grep -v -i warn | tee "$OUT/ab-pre-decays-b.txt"
timeout 250 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py 2>&1 | tee "$OUT/tests-ssd.txt" | tail -4
