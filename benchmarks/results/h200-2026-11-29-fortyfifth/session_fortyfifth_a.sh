#!/usr/bin/env bash
# Forty-fifth session, call 3: the forward's configurations in the Mamba-1 mixer's layout (channels contiguous),
# where calls 1-2 left them: 16x2K gained 4 % from one-warp 32-channel programs in late 512-token segments; is it so
# at 8x2K and 32x2K, in the training forward, and with smaller segments or 16-token tiles? And batch 1 / 2 / 4, which
# keep the tokens-contiguous choice (4 lanes or 32-channel one-lane programs: 64 bytes a token), against one lane in
# 64 channels with early segments.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
mkdir -p "$OUT/c"
timeout 330 python3 benchmarks/ab_forward_configs.py --shape 8x2048-mixer --shape 32x2048-mixer \
  --shape 8x2048-mixer-train --shape 16x2048-mixer \
  --config 1,8,1,32,512,late --config 1,8,1,32,256,late --config 1,8,2,64,512,late --config 1,8,1,32 \
  2>&1 | grep -v -i warn | tee "$OUT/c/ab-full-grids.txt"
timeout 200 python3 benchmarks/ab_forward_configs.py --shape 1x32768-mixer --shape 4x8192-mixer \
  --shape 2x16384-mixer \
  --config 1,8,2,64,1024 --config 1,8,2,64,2048 --config 1,8,1,32,2048 --config 1,8,1,32,1024 2>&1 \
  | grep -v -i warn | tee "$OUT/c/ab-short-grids.txt"
