#!/bin/bash
# Twenty-fifth session, call 1: (a) the forward at few chains in smaller chunks than the caller's (GPU time alone,
# CUDA graphs); (b) the paths and pair launches' knobs again at the backward's 128-token chunks (8x4K).
set -x
cd "$(dirname "$0")/../../.." || exit 1
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/device.txt
timeout 200 python3 benchmarks/ab_fwd_chunk.py 3 --workloads 1x2048,1x4096,2x2048,1x8192,1x32768 \
    > $OUT/call1-ab-fwd-chunk.txt 2>&1
cat $OUT/call1-ab-fwd-chunk.txt | tail -8
timeout 330 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none \
    --variants tiles,tiles:j3,tiles:e10,tiles:e40:j3,tiles:h10,tiles:g168 --profile \
    > $OUT/call1-ab-knobs.txt 2>&1
tail -30 $OUT/call1-ab-knobs.txt
