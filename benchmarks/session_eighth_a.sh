#!/usr/bin/env bash
# Eighth session, first GPU call: the selective-scan forward's residency. ncu (2026-11-22) showed the
# 8x2K forward at 1.21 waves (194 registers: 8 one-warp programs per SM, 1056 of its 1280 warps in the
# first wave; SM active 76 % of the elapsed cycles). Sweep register caps against lanes and segments and
# print each compiled kernel's registers, spills and residency. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/env.txt"
timeout 540 python3 benchmarks/tune_scan_segments.py --forward \
  8x2048x5120:1,1,0 8x2048x5120:1,1,0,8,168 8x2048x5120:1,1,0,8,128 8x2048x5120:2,1,0,8,128 \
  8x2048x5120:2,1,0,8,96 8x2048x5120:4,2,0 8x2048x5120:4,2,0,8,128 \
  4x8192x5120:1,1,0,8,168 4x8192x5120:2,1,0,8,128 4x8192x5120:2,1,0,8,96 4x8192x5120:4,2,0,8,128 \
  2x16384x5120:4,2,0,8,128 2x16384x5120:2,1,0,8,128 2x16384x5120:2,1,0,8,96 \
  1x32768x5120:1,1,4096,8,168 1x32768x5120:1,1,3648,8,168 1x32768x5120:1,1,3648 1x32768x5120:1,1,2048,8,168 \
  1x32768x1536:1,1,1024,8,168 1x32768x1536:1,1,1216,8,168 \
  1x262144x5120:1,1,9088,8,168 1x262144x5120:1,1,13824,8,168 \
  1x4096x5120:4,2,0,8,128 1x2048x5120:4,2,0,8,128 \
  2>&1 | tee "$OUT/tune-regs.txt"
