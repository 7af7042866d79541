#!/usr/bin/env bash
# Twenty-seventh session, call 2: few chains (1x32K, 4x8K) with the tiles in chunks of 128 and the state recompute and
# the chain launch two chunks a program (halves, the new default) against the forward's chunk of 256 (k256:H0, the
# default before) and against 256 with programs of two chunks (k256:H1); backward alone, per kernel, peak memory, the
# gradients' errors against float64 at 2x4K (160 chains: early forms too); then the GPU tests of the backward file.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
timeout 330 python3 benchmarks/ab_tiles.py 3 --shapes 1x32768,4x8192 --opts none,dz --profile --memory \
  --errors --errors-shape 2x4096 --variants tiles:k256:H0,tiles,tiles:k256:H1 2>&1 | grep -v -i warn \
  | tee "$OUT/call2-ab-halves.txt"
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call2-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
