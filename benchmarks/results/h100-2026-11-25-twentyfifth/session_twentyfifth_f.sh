#!/usr/bin/env bash
# Twenty-fifth session, call 6: the in-place recompute with the next chunk's dH prefetched into L2 (forward.PREFETCH_DH):
# two buffers (the atomic default) against one (i1), backward alone, per kernel, memory.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 280 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz --profile --memory \
  --variants tiles,tiles:i1,tiles:det 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call6-ab-prefetch.txt"
