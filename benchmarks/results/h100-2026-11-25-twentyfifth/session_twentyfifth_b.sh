#!/bin/bash
# Twenty-fifth session, call 2: the states recomputed over their gradients (one buffer; in_place) against two buffers
# (i0), and the paths launch at three stages (j3); backward alone, per kernel, peak memory. 2.7B shape, bf16.
set -x
cd "$(dirname "$0")/../../.." || exit 1
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/device.txt
timeout 250 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none,d,dz \
    --variants tiles:i0,tiles,tiles:i0:j3,tiles:j3 --profile --memory > $OUT/call2-ab-inplace.txt 2>&1
grep -v Warning $OUT/call2-ab-inplace.txt | grep -v warn_once | tail -20
timeout 150 python3 benchmarks/ab_tiles.py 3 --shapes 1x32768,8x4096 --opts none \
    --variants tiles:det:i0,tiles:det:k128,tiles:det:k128:j3 --profile --memory > $OUT/call2-ab-det.txt 2>&1
grep -v Warning $OUT/call2-ab-det.txt | grep -v warn_once | tail -12
timeout 120 python3 benchmarks/ab_tiles.py 3 --shapes 1x32768 --opts none,dz \
    --variants tiles:i0,tiles,tiles:j3 --profile --memory > $OUT/call2-ab-1x32K.txt 2>&1
grep -v Warning $OUT/call2-ab-1x32K.txt | grep -v warn_once | tail -10
