#!/usr/bin/env bash
# Forty-first session, call 2: the packed backward's rows with their inner chunks on the dense batch's code
# (scan.INNER_CHUNKS_DENSE) against every chunk with the window's masks ("rows masked", the session's start) and the
# dense batch, backward alone (benchmarks/ab_packed_scan_bwd.py, alternating); then the training call in the bench.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call2"
timeout 200 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x2048 --rounds 3 --forms "dense,rows masked,rows" 2>&1 \
  | grep -v -i warn | tee "$OUT/call2/ab-8x2048.txt"
timeout 90 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x2048 --ragged --rounds 3 --forms "rows masked,rows" 2>&1 \
  | grep -v -i warn | tee "$OUT/call2/ab-ragged8.txt"
timeout 60 python3 benchmarks/ab_packed_scan_bwd.py --scan 64x256 --ragged --rounds 3 --forms "rows masked,rows" 2>&1 \
  | grep -v -i warn | tee "$OUT/call2/ab-ragged64.txt"
timeout 150 python3 -m flashssm bench -i flashssm -w m1train-2.8b-8x2K -w m1train-2.8b-packed-8x2K \
  -w m1train-2.8b-packed-64x256 > "$OUT/call2/bench.txt" 2>&1
grep -v -i warn "$OUT/call2/bench.txt" | grep -A3 "^m1"
