#!/usr/bin/env bash
# Thirteenth session, third GPU call: register caps for the tiles kernel (3 or 4 programs an SM instead of 2) and the
# pair launch (8 warps, 2 programs an SM at 128 registers), by ab_tiles' knobs r (tiles) and q, v (pairs).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 420 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,d --profile \
  --variants tiles,tiles:r168,tiles:r160,tiles:r168:v8:q128,tiles:r160:v8:q128 2>&1 | grep -v -i warn \
  | tee "$OUT/ab-caps.txt"
