#!/bin/bash
# Twenty-fourth session, call 1: the SSD backward in chunks of 128 (and 64) where the forward's chunk is 256.
# Per kernel, memory and errors against float64, backward alone, 2.7B shape, bf16.
set -x
cd "$(dirname "$0")/../../.." || exit 1
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/device.txt
python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,d,dz \
    --variants tiles,tiles:k128,tiles:k64,tiles:k128:c8 --profile --memory --errors \
    > $OUT/call1-ab-chunk.txt 2>&1
tail -3 $OUT/call1-ab-chunk.txt
