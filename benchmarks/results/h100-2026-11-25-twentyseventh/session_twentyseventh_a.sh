#!/usr/bin/env bash
# Twenty-seventh session, call 1: the forward's C.B^T from a preparation launch (once per group, `pre_cb`) against the
# product in the output sweep, forward alone and training call, 2.7B shape at ngroups 1, 8 and 40; then the GPU
# forward tests with it on (forward.PRE_CB defaults to True in this checkout).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
timeout 200 python3 benchmarks/results/h100-2026-11-25-twentyseventh/ab_pre_cb.py 3 --groups 1 2>&1 | grep -v -i warn | tee "$OUT/call1-ab-pre-cb-g1.txt"
timeout 120 python3 benchmarks/results/h100-2026-11-25-twentyseventh/ab_pre_cb.py 3 --groups 8,40 --workloads 1x32768,8x4096 --train-max 0 2>&1 \
  | grep -v -i warn | tee "$OUT/call1-ab-pre-cb-g8-g40.txt"
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/call1-tests-fwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
