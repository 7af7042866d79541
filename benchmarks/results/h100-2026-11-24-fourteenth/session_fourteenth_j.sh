#!/usr/bin/env bash
# Fourteenth session, tenth GPU call: the chain launch's early form (few chains: one program a chunk) in steps of 128
# without z, as its span form takes (d128), at batch 1 and 2, with and without D.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_tiles.py 3 --shapes 1x32768,2x16384,1x8192 --opts none,d --profile \
  --variants tiles,tiles:d128 2>&1 | grep -v -i warn | tee "$OUT/ab-early-step.txt"
