#!/usr/bin/env bash
# Twenty-sixth session, call 6: the pair launch (rows only now) with three stages or fewer heads a program (40, 20:
# more programs, a shorter tail); the errors of the column sums from an unsplit bracket (split:m0, every product
# rounds) against the split default and the pair launch's own sums (C0).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/device6.txt" 2>&1
timeout 200 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:o3,tiles:h40,tiles:h20 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call6-ab-pair.txt"
timeout 150 python3 benchmarks/ab_tiles.py 1 --shapes 1x2048 --opts none --errors --errors-shape 2x4096 \
  --opts none,dz --variants tiles,tiles:split:m0,tiles:C0 2>&1 | grep -v Warn | grep -v warn_once \
  | tee "$OUT/call6-errors.txt"
