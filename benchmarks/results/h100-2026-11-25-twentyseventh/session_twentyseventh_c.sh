#!/usr/bin/env bash
# Twenty-seventh session, call 3: the halves rule (`early_halves`: the recompute where a sequence has 64 chunks or
# more, the chain launch without z or D) against a program a chunk (H0), few-chain shapes, three option sets;
# backward alone, per kernel, peak memory; errors against float64 at 2x4K.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
timeout 400 python3 benchmarks/ab_tiles.py 3 --shapes 1x32768,2x16384,4x8192,1x8192 --opts none,d,dz --profile \
  --errors --errors-shape 2x4096 --variants tiles:H0,tiles 2>&1 | grep -v -i warn | tee "$OUT/call3-ab-halves-rule.txt"
