#!/usr/bin/env bash
# Fortieth session, calls 5 and 6 (run as these command lines on the warm H200 of call 4): the packed backward alone
# (benchmarks/ab_packed_scan_bwd.py), the longest rows first in ticket order (LONGEST_FIRST, "rows") against sequence
# order ("rows unordered") and the packed row as one batch-1 sequence; then 8x2048 chunk-aligned against the dense
# batch.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# call 5
timeout 100 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x2048 --ragged --rounds 3 \
  --forms "rows unordered,rows,batch-1 row" 2>&1 | grep -v -i warn | tee "$OUT/call5-ab-ragged.txt"
# call 6
timeout 40 python3 benchmarks/ab_packed_scan_bwd.py --scan 64x256 --ragged --rounds 3 \
  --forms "rows unordered,rows,batch-1 row" 2>&1 | grep -v -i warn | tee "$OUT/call6-ab-ragged64.txt"
timeout 100 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x2048 --rounds 3 --forms "dense,batch-1 row,rows" 2>&1 \
  | grep -v -i warn | tee "$OUT/call6-ab-8x2048.txt"
