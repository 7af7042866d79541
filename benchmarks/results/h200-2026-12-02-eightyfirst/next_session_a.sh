#!/usr/bin/env bash
# Prepared for the next session (not run: the eighty-first session had too little device time left to start a machine).
# The spacing of the states the forward keeps for the backward (BackwardConfig.chunk), last swept on the H100's v2
# backward (chunks of 16, 32, 64 within 4 %; 16 the fastest by 0.3 %). The backward's pass 1 recomputes the states through all but the last tile of a chunk:
# 3 of 4 tiles at 32, 1 of 2 at 16, 7 of 8 at 64; 16 doubles the stored states (+168 MB at 8x2K, written and read).
# Forward + backward and backward alone (the tuner's difference), 8x2K, each chunk twice, interleaved.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 210 python3 benchmarks/tune_selective_scan.py --backward \
  --configs "m1train-2.8b-8x2K:4,32,1;m1train-2.8b-8x2K:4,16,1;m1train-2.8b-8x2K:4,64,1;m1train-2.8b-8x2K:4,32,1;m1train-2.8b-8x2K:4,16,1;m1train-2.8b-8x2K:4,64,1" \
  > "$OUT/tune-chunk.txt" 2>&1
echo "rc $?" >> "$OUT/tune-chunk.txt"
tail -12 "$OUT/tune-chunk.txt"
