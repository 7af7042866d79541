#!/usr/bin/env bash
# Forty-seventh session, call 3: (1) the 1x1K backward, whose segments of 128 the forty-sixth session's rule takes on
# two do_bench runs that disagreed (0.88x and 1.06x of no segments): three runs of each configuration, in turn;
# (2) call 2's 2x16384 packed backward (equal lengths), which printed nothing within its 100 s.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for r in 1 2 3; do
  timeout 90 python3 benchmarks/tune_scan_segments.py --backward 1x1024x5120:4,0 1x1024x5120:4,128 \
    1x1024x5120:4,256 2>&1 | grep -v -i warn
done | tee "$OUT/c/bwd-1x1K.txt"
timeout 200 python3 benchmarks/ab_packed_scan_bwd.py --scan 2x16384 --forms dense,rows --rounds 5 2>&1 \
  | grep -v -i warn | tee "$OUT/c/packed-bwd-2x16K.txt"
