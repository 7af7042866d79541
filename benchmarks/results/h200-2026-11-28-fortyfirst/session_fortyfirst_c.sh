#!/usr/bin/env bash
# Forty-first session, call 3: Mamba-1's packed forward with rows of one sequence in the window form (scan.WINDOW_FWD:
# no per-token sequence index and reset multiply; only a row's first and last tile masked) against the varlen form
# ("rows varlen", the session's start) and the dense batch, forward storing the backward's states
# (benchmarks/ab_packed_scan_bwd.py --forward, alternating); then the bench's Mamba-1 packed workloads.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call3"
timeout 150 python3 benchmarks/ab_packed_scan_bwd.py --forward --scan 8x2048 --rounds 5 --forms "dense,rows varlen,rows" \
  2>&1 | grep -v -i warn | tee "$OUT/call3/ab-fwd-8x2048.txt"
timeout 60 python3 benchmarks/ab_packed_scan_bwd.py --forward --scan 8x2048 --ragged --rounds 5 --forms "rows varlen,rows" \
  2>&1 | grep -v -i warn | tee "$OUT/call3/ab-fwd-ragged8.txt"
timeout 60 python3 benchmarks/ab_packed_scan_bwd.py --forward --scan 64x256 --ragged --rounds 5 \
  --forms "dense,rows varlen,rows" 2>&1 | grep -v -i warn | tee "$OUT/call3/ab-fwd-ragged64.txt"
timeout 200 python3 -m flashssm bench -i flashssm -w m1-2.8b-8x2K -w m1-2.8b-packed-8x2K -w m1train-2.8b-8x2K \
  -w m1train-2.8b-packed-8x2K -w m1train-2.8b-packed-64x256 > "$OUT/call3/bench.txt" 2>&1
grep -v -i warn "$OUT/call3/bench.txt" | grep -A3 "^m1"
