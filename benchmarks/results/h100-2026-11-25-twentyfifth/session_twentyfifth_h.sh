#!/usr/bin/env bash
# Twenty-fifth session, call 8: tiles programs running 2 or 4 heads of a group one after another (H2, H4; their S^T
# tiles and B rows then come from L1 after the first head) against one head a program; backward alone, per kernel.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,dz --profile \
  --variants tiles,tiles:H2,tiles:H4 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call8-ab-heads.txt"
