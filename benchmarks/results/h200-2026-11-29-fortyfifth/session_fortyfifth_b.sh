#!/usr/bin/env bash
# Forty-fifth session, call 4: call 3's first run stopped at a tile of 16 (not allowed); the full grids again without
# it, and batch 2 (which call 3 found 19 % faster with one lane in 1024-token early segments) in both layouts.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/d"
timeout 150 python3 benchmarks/ab_forward_configs.py --shape 2x16384 --shape 2x16384-mixer --shape 2x16384-mixer-train \
  --config 1,8,1,32,1024 --config 1,8,1,32,512 --config 1,8,1,32,1536 2>&1 | grep -v -i warn \
  | tee "$OUT/d/ab-batch2.txt"
timeout 250 python3 benchmarks/ab_forward_configs.py --shape 8x2048-mixer --shape 32x2048-mixer \
  --shape 8x2048-mixer-train \
  --config 1,8,1,32,512,late --config 1,8,1,32,256,late --config 1,8,2,64,512,late 2>&1 | grep -v -i warn \
  | tee "$OUT/d/ab-full-grids.txt"
