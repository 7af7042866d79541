#!/usr/bin/env bash
# Twenty-first session, first GPU call: (1) the selective scan's kernels after the refactor (one helper for the
# slot-ahead step, the tile's load and processing split), alternating with the previous scan.py (8029b98) in one
# process: times and the largest output/gradient difference; (2) the backward's 168-register cap and segment length
# retried after the twentieth session's loads-ahead (dim 1536 1x8K, 8x2K, 1x32K, dstate 128 1x1K).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentyfirst  # scan_8029b98.py: git show 8029b98:flashssm/ops/selective_scan/scan.py (not kept)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 330 python3 benchmarks/ab_scan_code.py --old $R/scan_8029b98.py --rounds 3 \
  m1train-2.8b-8x2K m1train-130m-1x8K m1train-n128-1x1K > "$OUT/call1-ab-code.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call1-ab-code.txt" | tail -16
timeout 240 python3 benchmarks/tune_scan_segments.py --backward \
  1x8192x1536:4,1664,168 1x8192x1536:4,1024,168 1x8192x1536:4,832,168 1x8192x1536:4,1024 \
  8x2048x5120:4,0,168 1x32768x5120:4,4096,168 1x32768x5120:4,2048,168 > "$OUT/call1-tune-n16.txt" 2>&1
echo "tune n16: exit $?"; grep -E "^ |^backward|^forward" "$OUT/call1-tune-n16.txt" | tail -14
