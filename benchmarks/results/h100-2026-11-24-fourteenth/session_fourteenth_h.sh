#!/usr/bin/env bash
# Fourteenth session, eighth GPU call: the pair launch (now the largest kernel) under its knobs again, the kernels
# around it having changed: stages (oN), heads a program (hN), warps and register cap (vN, qN).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:o1,tiles:o3,tiles:h40,tiles:v4:q168,tiles:v4,tiles:h40:o3 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-pairs.txt"
