#!/usr/bin/env bash
# Twelfth session, fourth GPU call: the tiles form (pair launch with int32 tile offsets) against the sweeps over the
# options a Mamba-2 layer takes, three sizes; GPU tests of the tiles form. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -k tiles -rf 2>&1 \
  | tee "$OUT/tests-tiles.txt" | tail -3
V=sweeps,tiles:round:h40,tiles:round:h80,tiles:round:h40:v8,tiles:h40
timeout 400 python3 benchmarks/ab_tiles.py 3 --profile --shapes 8x4096,1x32768,1x2048 --opts none,d,dz --variants $V 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-tiles.txt"
