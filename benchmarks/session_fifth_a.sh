#!/usr/bin/env bash
# Fifth session, first GPU call: the backward's tests on CUDA (every mark), the state recompute's A/B, and the
# forward with C.B^T ahead (late: 8x4K, 32x2K; early: 1x32K, 1x128K). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
timeout 110 python3 benchmarks/ab_entering_states.py 2>&1 | tee "$OUT/ab-states.txt"
timeout 90 python3 benchmarks/tune_ssd_forward.py --mode late --workload 2.7b-8x4K --workload 2.7b-32x2K \
  --candidate 64,64,4,2,0,1,8,1,0 --candidate 64,64,4,2,0,1,8,1,1 2>&1 | tee "$OUT/tune-cb-late.txt" | grep -v "^$"
timeout 90 python3 benchmarks/tune_ssd_forward.py --mode early --workload 2.7b-1x32K --workload 2.7b-1x128K \
  --candidate 64,64,4,2,0,1,8,0,0 --candidate 64,64,4,2,0,1,8,0,1 2>&1 | tee "$OUT/tune-cb-early.txt" | grep -v "^$"
timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -8
