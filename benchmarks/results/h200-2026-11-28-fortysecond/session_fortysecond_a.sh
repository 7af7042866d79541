#!/usr/bin/env bash
# Forty-second session, call 1: what the rows' alignment hints (scan.ROW_ALIGN, `row_align`) give at lengths that
# are multiples of 8 or 4 but not 16, forward and training, against the JIT's marks alone (ROW_ALIGN 1), alternating;
# the Mamba-1 mixer's layout at odd lengths; then the forty-first session's leftovers (next_session_a.sh there).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call1"
run() { local name=$1; shift; timeout "$@" 2>&1 | grep -v -i warn | tee "$OUT/call1/$name.txt"; }
run odd-fwd 200 python3 benchmarks/odd_length_scan.py --seqlen 2048 --seqlen 2040 --seqlen 2044 --seqlen 2047 \
  --row-align 8 --row-align 1
run odd-train 300 python3 benchmarks/odd_length_scan.py --train --seqlen 2048 --seqlen 2040 --seqlen 2047 \
  --row-align 8 --row-align 1
run odd-fwd-channels-last 120 python3 benchmarks/odd_length_scan.py --channels-last --seqlen 2048 --seqlen 2047
run ab-1x16384 200 python3 benchmarks/ab_packed_scan_bwd.py --scan 1x16384 --rounds 3 --forms "batch-1 row,rows segments"
run odd-1x16K 120 python3 benchmarks/odd_length_scan.py --batch 1 --seqlen 16384 --seqlen 16383
