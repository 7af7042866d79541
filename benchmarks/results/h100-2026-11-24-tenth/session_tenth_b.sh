#!/usr/bin/env bash
# Tenth session, second GPU call: the chain backward's early-publish pass (each chunk's own share of the state
# gradient entering it) in steps of 32 / 64 / 128 tokens and late publish, at batch 1 and 2 (tune_ssd_backward.py
# --share-steps), and the chain form's GPU tests with the larger steps. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 120 python3 -m pytest -n 4 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  -k "share_steps or chain_product_modes or decay_gradient" -rf 2>&1 | tee "$OUT/tests-share.txt" | tail -3
timeout 300 python3 benchmarks/tune_ssd_backward.py --share-steps 2>&1 | grep -v -i warn | tee "$OUT/tune-share.txt"
