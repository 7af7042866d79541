#!/usr/bin/env bash
# Forty-sixth session, call 8: the two shapes call 7's rule moved from 512-token to 256-token segments unmeasured
# (2x2K of the 2.8B shape, 8x2K of the 130M width), the picked 256 against 512 and 128.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/h"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/tune_scan_segments.py --backward 2x2048x5120:4,512 2x2048x5120:4,128 \
  8x2048x1536:4,512 8x2048x1536:4,128 2>&1 | grep -v -i warn | tee "$OUT/h/tune-bwd-2K.txt"
