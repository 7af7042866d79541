#!/usr/bin/env bash
# Twentieth session, third GPU call: the backward's tile inputs loaded a tile ahead (A/B against the B/C rows a slot
# ahead alone), stall sampling of the backward with B/C ahead, and backward segments over more shapes (dstate 128
# and dim 1536) for the segment rule.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 230 python3 benchmarks/ab_scan_ahead.py --variants bc,bc+tile m1train-2.8b-8x2K m1train-n128-1x1K \
  m1train-130m-1x8K m1train-2.8b-1x32K 2>&1 | grep -v Warn | tee "$OUT/call3-ab-tile.txt"
timeout 90 bash benchmarks/profile_scan_backward.sh m1train-2.8b-8x2K "$OUT/ncu" > "$OUT/call3-ncu-8x2K.txt" 2>&1
python3 benchmarks/stall_summary.py "$OUT/ncu/src-m1train-2.8b-8x2K.csv.gz" --top 30 --context 3 \
  > "$OUT/call3-stalls-8x2K.txt" 2>&1; head -3 "$OUT/call3-stalls-8x2K.txt"
a=1x1024x5120; b=1x2048x5120; c=2x1024x5120; e=4x1024x5120
timeout 130 python3 benchmarks/tune_scan_segments.py --dstate 128 --backward $a:16,128 $a:16,256 $a:16,512 \
  $b:16,0 $b:16,256 $b:16,512 $b:16,1024 $c:16,0 $c:16,256 $c:16,512 $e:16,0 $e:16,256 2>&1 | grep -v Warn \
  | tee "$OUT/call3-tune-n128.txt"
a=1x8192x1536; b=2x8192x1536; c=4x2048x1536; e=1x32768x5120
timeout 130 python3 benchmarks/tune_scan_segments.py --backward $a:4,832 $a:4,1024 $a:4,2048 $b:4,0 $b:4,1024 \
  $b:4,2048 $c:4,0 $c:4,512 $c:4,1024 $e:4,2048 $e:4,8192 2>&1 | grep -v Warn | tee "$OUT/call3-tune-n16.txt"
