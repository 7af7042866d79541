#!/usr/bin/env bash
# Fortieth session, call 4: the packed backward alone (benchmarks/ab_packed_scan_bwd.py): one 16384-token sequence as
# rows (three segments) against the batch-1 row (call 3's run of it was cut off by its limit, compiling on a fresh
# machine); 8x2048 ragged with the longest rows first in ticket order (LONGEST_FIRST) against sequence order.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 benchmarks/ab_packed_scan_bwd.py --scan 1x16384 --rounds 3 --forms "batch-1 row,rows" > "$OUT/call4-ab.txt" 2>&1
grep -v -i warn "$OUT/call4-ab.txt"
# (as run, this line named the form "rows, in order", which --forms splits at its comma: it failed, call4-ab-ragged.txt;
# the form is "rows unordered" since, and call 5 ran it)
timeout 60 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x2048 --ragged --rounds 3 --forms "rows unordered,rows" > "$OUT/call4-ab-ragged.txt" 2>&1
grep -v -i warn "$OUT/call4-ab-ragged.txt"
