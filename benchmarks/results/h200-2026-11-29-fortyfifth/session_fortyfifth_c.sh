#!/usr/bin/env bash
# Forty-fifth session, call 5: one lane in early segments beat the picked 4 lanes at 2x16K (call 4: 512 tokens
# -11.5 % contiguous, -23.6 % in the mixer's layout; 1024 and 1536 less), where the rounds model (_segment_for)
# chose none, and at 1x32K 1024 tokens gained 1.7 % over its 1728. Shorter segments where one lane already runs in
# segments (batch 1), and at batch 2 shorter still and at 8K.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/e"
ab() { python3 benchmarks/ab_forward_configs.py "$@" 2>&1 | grep -v -i warn | tee -a "$OUT/e/ab-segments.txt"; }
timeout 120 bash -c "$(declare -f ab); OUT=$OUT; ab --shape 1x32768-mixer --shape 1x32768 \
  --config 1,8,1,32,384 --config 1,8,1,32,512 --config 1,8,1,32,768"
timeout 100 bash -c "$(declare -f ab); OUT=$OUT; ab --shape 2x16384-mixer --shape 2x8192-mixer \
  --config 1,8,1,32,256 --config 1,8,1,32,384 --config 1,8,1,32,512 --config 1,8,1,32,1024"
timeout 80 bash -c "$(declare -f ab); OUT=$OUT; ab --shape 1x8192-mixer -w m1-130m-1x32K \
  --config 1,8,1,32,256 --config 1,8,1,32,512 --config 1,8,1,32,768"
