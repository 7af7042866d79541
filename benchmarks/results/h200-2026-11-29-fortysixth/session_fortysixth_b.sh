#!/usr/bin/env bash
# Forty-sixth session, call 2: the backward's new segment rule (`_backward_segment`: 512-token segments under two
# waves of programs) against the rounds model's picks it replaced, at the shapes call 1 did not measure (the picked
# configuration is timed first; each knob is the old pick), then the forward's early segments at the 130M width's
# batch 6-8 (the rule takes them up to 0.97 of a wave of four-lane programs; call 1: 8x2K lost 11 % to four lanes).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 330 python3 benchmarks/tune_scan_segments.py --backward \
  1x1024x5120:4,0 1x2048x5120:4,0 2x2048x5120:4,0 1x4096x5120:4,1376 2x4096x5120:4,0 3x8192x5120:4,0 \
  4x2048x1536:4,0 8x2048x1536:4,0 1x32768x1536:4,3008 1x131072x5120:4,7296 2>&1 | grep -v -i warn \
  | tee "$OUT/b/tune-bwd-rule.txt"
timeout 200 python3 benchmarks/ab_forward_configs.py --shape 6x2048x1536 --shape 8x4096x1536 --shape 6x8192x1536 \
  --shape 8x8192x1536 --config 4,8,2,16 2>&1 | grep -v -i warn | tee "$OUT/b/ab-130m.txt"
