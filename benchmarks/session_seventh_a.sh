#!/usr/bin/env bash
# Seventh session, first GPU call: selective_scan's sequence segments. The segment sweep
# (benchmarks/tune_scan_segments.py: batch 1 at dim 5120 and 1536, 8x2K as a check), then the
# selective-scan tests on CUDA (every mark). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/env.txt"
timeout 340 python3 benchmarks/tune_scan_segments.py \
  --forward 1x32768x5120:4,2,0 1x32768x5120:1,1,2048 1x32768x5120:1,1,4096 1x32768x5120:1,1,8192 \
            1x32768x5120:2,1,4096 1x32768x5120:2,1,8192 1x32768x5120:4,2,8192 1x32768x5120:4,2,16384 \
            1x262144x5120:4,2,0 1x262144x5120:1,1,16384 1x262144x5120:1,1,32768 1x262144x5120:2,1,32768 \
            1x262144x5120:4,2,65536 \
            1x32768x1536:16,1,0 1x32768x1536:1,1,1024 1x32768x1536:1,1,2048 1x32768x1536:1,1,4096 \
            1x32768x1536:2,1,2048 1x32768x1536:4,2,4096 \
            8x2048x5120:1,1,1024 \
  --backward 1x32768x5120:4,0 1x32768x5120:4,8192 1x32768x5120:4,4096 1x32768x5120:4,2048 \
             1x32768x1536:4,0 1x32768x1536:4,4096 1x32768x1536:4,2048 1x32768x1536:4,1024 \
             8x2048x5120:4,1024 2>&1 | tee "$OUT/tune-segments.txt"
timeout 220 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tee "$OUT/tests-scan.txt" | tail -25
