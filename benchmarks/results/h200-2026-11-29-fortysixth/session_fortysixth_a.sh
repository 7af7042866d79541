#!/usr/bin/env bash
# Forty-sixth session, call 1: the backward's segments (next_session_a.sh 2 of the forty-fifth session, with the
# forward's winning 128- and 256-token segments added), then the forward's early-segment rule at the 130M width's
# batch 3-8 (unmeasured: it takes one lane in 128-token segments where four lanes ran before).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee "$OUT/a/gpu.txt"
timeout 400 python3 benchmarks/tune_scan_segments.py --backward \
  1x32768x5120:4,128 1x32768x5120:4,256 1x32768x5120:4,512 1x32768x5120:4,1024 1x32768x5120:4,2048 \
  2x16384x5120:4,128 2x16384x5120:4,256 2x16384x5120:4,512 2x16384x5120:4,1024 \
  4x8192x5120:4,128 4x8192x5120:4,256 4x8192x5120:4,512 8x2048x5120:4,256 8x2048x5120:4,512 \
  1x8192x1536:4,128 1x8192x1536:4,256 1x8192x1536:4,512 2>&1 | grep -v -i warn | tee "$OUT/a/tune-bwd-segments.txt"
timeout 140 python3 benchmarks/ab_forward_configs.py --shape 3x8192x1536 --shape 4x8192x1536 --shape 8x2048x1536 \
  --config 4,8,2,16 --config 2,8,1,16 2>&1 | grep -v -i warn | tee "$OUT/a/ab-130m.txt"
