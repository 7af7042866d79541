#!/usr/bin/env bash
# Sixty-first session, call 3 (about 300 s): the fp16 forward's accuracy on the bench's inputs (fp16_accuracy.py), and
# ssd_scan's calls timed at fp16 and bf16 in one tree (time_ssd_calls.py: the inference forward takes the Gluon kernel
# at both now; training stores the tiles' states, which keeps fp16's training forward on the Triton kernel).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
R=benchmarks/results/h200-2026-11-30-sixtyfirst
PYTHONPATH=$PWD timeout 150 python3 $R/fp16_accuracy.py > "$OUT/fp16-accuracy.txt" 2>&1
echo "== accuracy rc $?"; grep -v -i warn "$OUT/fp16-accuracy.txt" | cut -c1-300
i=0
for d in fp16 bf16 fp16; do
  i=$((i + 1))
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/time_ssd_calls.py 8x4K 1x32K 1x128K 1x2K --train 8x4K 1x32K \
    --dtype $d > "$OUT/time-$i-$d.txt" 2>&1
  echo "== time $d rc $?"; grep -v -i warn "$OUT/time-$i-$d.txt" | cut -c1-120
done
