#!/usr/bin/env bash
# Eighth session, second GPU call: the selective-scan forward with the 168-register cap picked (one lane,
# and every segmented forward; the wave model at 12 resident programs per SM), timed against neighbouring
# caps and the two- and four-lane layouts under the same cap; dstate 128; then the selective-scan GPU tests
# and the bench of the Mamba-1 forward workloads. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 300 python3 benchmarks/tune_scan_segments.py --forward \
  8x2048x5120:1,1,0,8,160 8x2048x5120:1,1,0,8,152 8x2048x5120:1,1,0,8,176 8x2048x5120:2,1,0,8,168 \
  4x8192x5120:2,1,0 4x8192x5120:2,1,0,8,168 4x8192x5120:2,1,0,8,160 \
  2x16384x5120:4,2,0 2x16384x5120:4,2,0,8,168 \
  1x32768x5120:1,1,3648,8,168 1x32768x5120:1,1,2048,8,168 \
  1x262144x5120:1,1,9088,8,168 \
  1x8192x5120:4,2,0 1x8192x5120:1,1,2048,8,168 \
  1x4096x5120:4,2,0,8,168 1x4096x5120:1,1,1024,8,168 1x2048x5120:4,2,0,8,168 \
  2>&1 | tee "$OUT/tune-regs-b.txt"
timeout 120 python3 benchmarks/tune_scan_segments.py --dstate 128 --forward \
  8x2048x5120:8,2,0,8,168 8x2048x5120:8,1,0,8,168 8x2048x5120:8,1,0 \
  2>&1 | tee "$OUT/tune-regs-n128.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tee "$OUT/tests-scan.txt" | tail -3
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1-n128-8x2K \
  -w m1train-2.8b-8x2K -i flashssm 2>&1 | tail -20
