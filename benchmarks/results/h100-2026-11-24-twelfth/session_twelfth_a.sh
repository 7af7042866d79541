#!/usr/bin/env bash
# Twelfth session, first GPU call: the chain backward's gradient launch in tiles (ops/ssd/backward_tiles.py).
# Its GPU tests (bf16 real shapes and the rest of the tiles form), its gradient errors against float64 at 1x2K,
# and the A/B against the sweeps over warps, tile, mode. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -k tiles -rf 2>&1 \
  | tee "$OUT/tests-tiles.txt" | tail -4
V=sweeps,tiles,tiles:round,tiles:w8,tiles:w8:round,tiles:t32:w8,tiles:t32:w4
timeout 120 python3 benchmarks/ab_tiles.py 1 --errors --shapes 1x2048 --opts d,dz --variants $V 2>&1 | grep -v -i warn \
  | tee "$OUT/tiles-errors.txt"
timeout 240 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,d --variants $V 2>&1 | grep -v -i warn \
  | tee "$OUT/ab-tiles.txt"
