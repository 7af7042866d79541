#!/usr/bin/env bash
# Eleventh session, first GPU call: the SSD backward tests on CUDA (the chain form's hand-overs included), then
# the A/B of the gradient chain as its own launch and of dD by its own launch (ab_chain_launch.py). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 330 python3 benchmarks/ab_chain_launch.py 3 --shapes 1x32768,8x4096,1x8192,1x2048 2>&1 | grep -v -i warn \
  | tee "$OUT/ab-launch.txt"
timeout 230 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -6
