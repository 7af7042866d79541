#!/usr/bin/env bash
# Tenth session, GPU call: the chain backward's gradient kernel with 1, 2 (the default) and 3 pipeline stages
# (offline, sm_90: 1 stage spills 704 B against 820 and has 3 % fewer instructions): gradient errors at 2x4K and
# backward times at 8x4K, 1x32K, 1x2K (tune_ssd_backward.py --chain-modes). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 400 python3 benchmarks/tune_ssd_backward.py --chain-modes --variants split:283/32,split:283/32/1,split:283/32/3,split:283/32 \
  2>&1 | grep -v -i warn | tee "$OUT/tune-stages.txt"
