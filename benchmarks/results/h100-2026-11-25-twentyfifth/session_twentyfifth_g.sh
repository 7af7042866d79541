#!/usr/bin/env bash
# Twenty-fifth session, call 7: the tiles' S^T tiles in bf16 (S16, the candidate default) against fp32 (S32): backward
# alone per kernel, and each variant's gradient errors against float64 (2x4K).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 330 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz --profile --errors \
  --errors-shape 2x4096 --variants tiles:S32,tiles,tiles:det:S32,tiles:det 2>&1 | grep -v Warn | grep -v warn_once \
  | tee "$OUT/call7-ab-s16.txt"
