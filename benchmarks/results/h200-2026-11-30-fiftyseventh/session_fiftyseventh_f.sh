#!/usr/bin/env bash
# Fifty-seventh session, call 8 (about 150 s): fp16 training with the tiles in the forward's 256-token chunks
# (TILES_CHUNK 0) against 128. At 256 the fp32 states the fp16 tiles keep (ca7fc30) take x's bytes, so the forward
# stores them again and the recompute launch goes; the tiles' pairs cost more (bf16, H100, twenty-fourth session:
# backward 3.06 -> 3.32 ms at 8 x 4K). Prediction: -2 to -5 % of the fp16 8 x 4K call (recompute -0.34 ms, the chain's
# dH rows halved, the tiles +0.2-0.3), peak memory below 128's.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.TILES_CHUNK --value 128 --value 0 \
  --workload 8x4K --rounds 3 --dtype fp16 --peak > "$OUT/c/ab-tiles-chunk-fp16.txt" 2>&1
echo "ab rc $?"; cut -c1-200 "$OUT/c/ab-tiles-chunk-fp16.txt" | grep -v "^\s*$" | tail -25
