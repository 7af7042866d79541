#!/usr/bin/env bash
# Fourteenth session, third GPU call: the paths launch with its decays from the tiles' scratch (no chunk-long
# reductions a head) and pipelined head loops (jN stages), heads a program (eN), against the state paths in the tiles
# kernel (p0); the gradient errors of both on the same inputs at 2x4K (with every option: d, dz).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles:p0,tiles,tiles:j1,tiles:j3,tiles:e40,tiles:e20,tiles:e20:j3,tiles:g255 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-paths.txt"
timeout 150 python3 benchmarks/ab_tiles.py 1 --shapes 2x4096 --opts none,dz --errors --errors-shape 2x4096 \
  --variants tiles:p0,tiles 2>&1 | grep -v -i warn | tee "$OUT/errors-paths.txt"
