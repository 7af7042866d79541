#!/usr/bin/env bash
# Thirteenth session, fourth GPU call: S^T tiles by a launch of their own (tiles:pre) against S per head in the tiles
# kernel, with the register caps now default.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,d --profile \
  --variants tiles,tiles:pre,tiles:pre:r128,tiles:pre:r160 2>&1 | grep -v -i warn | tee "$OUT/ab-pre.txt"
