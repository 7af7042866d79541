#!/usr/bin/env bash
# Seventh session, third GPU call: the segment choice by whole waves (forward_config / backward_config
# after the second call) against its neighbours and the lane-only configurations, then the bench of the
# selective scan's batch-1 workloads and the GPU segment tests. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 330 python3 benchmarks/tune_scan_segments.py \
  --forward 1x32768x5120:1,1,2048 1x262144x5120:1,1,16384 1x32768x1536:1,1,1024 1x8192x1536:16,1,0 \
            1x4096x5120:1,1,1024 1x4096x5120:4,2,0 1x8192x5120:4,2,0 2x16384x5120:1,1,2048 2x16384x5120:4,2,0 \
            4x8192x5120:2,1,0 4x8192x5120:4,2,0 8x2048x5120:2,1,0 8x2048x5120:4,2,0 \
  --backward 1x32768x1536:4,2048 1x8192x5120:4,0 1x2048x5120:4,1024 1x32768x5120:4,0 \
  2>&1 | tee "$OUT/tune-waves.txt"
timeout 120 python3 -m pytest -p no:cacheprovider -m gpu tests/ops/test_selective_scan.py -k segments 2>&1 \
  | tee "$OUT/tests-segments.txt" | tail -3
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1train-130m-1x8K -i flashssm 2>&1 | tail -16
