#!/usr/bin/env bash
# Ready for the next session's first device call (the forty-first session's leftovers, not yet run): whether one long
# sequence's packing should take the backward's rows now that their inner chunks run the dense code
# (ROWS_BWD_SEGMENTS), and what a length that is not a multiple of 16 costs the training call and a packing.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/next"
timeout 240 python3 benchmarks/ab_packed_scan_bwd.py --scan 1x16384 --rounds 3 --forms "batch-1 row,rows segments" \
  2>&1 | grep -v -i warn | tee "$OUT/next/ab-1x16384.txt"
timeout 200 python3 benchmarks/odd_length_scan.py --train --seqlen 2048 --seqlen 2047 2>&1 | grep -v -i warn \
  | tee "$OUT/next/odd-train.txt"
timeout 120 python3 benchmarks/odd_length_scan.py --batch 1 --seqlen 16384 --seqlen 16383 2>&1 | grep -v -i warn \
  | tee "$OUT/next/odd-1x16K.txt"
