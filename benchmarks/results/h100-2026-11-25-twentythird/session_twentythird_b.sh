#!/usr/bin/env bash
# Twenty-third session, second GPU call: the SSD backward's pair launch with two heads an iteration of its head loop
# (backward_tiles.PAIR_HEADS2; ab_tiles knob x2), capped at 128 registers (two programs an SM, 380 B spilled offline)
# and uncapped (242 registers, one program an SM), against one head an iteration; per-kernel times.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 420 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,d --profile \
  --variants tiles,tiles:x2,tiles:x2:q255,tiles:q255 > "$OUT/call2-ab-heads2.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call2-ab-heads2.txt" | tail -24
