#!/usr/bin/env bash
# Thirtieth session, call 1: the Gluon forward with the early publish (few chains: batch 1) and the late sweep's
# C.B^T waited for before the next products (ptxas serialised every wgmma otherwise, once the own-state products were
# in the kernel). The SSD forward GPU tests, then the A/B against the Triton kernel (benchmarks/ab_gluon_forward.py)
# on every forward workload.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader > "$OUT/device.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/call1-tests-fwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -30
timeout 240 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x2K \
  --workload 2.7b-1x8K --workload 2.7b-1x32K --workload 2.7b-1x128K 2>&1 | grep -v -i warn | tee "$OUT/call1-ab-gluon.txt"
