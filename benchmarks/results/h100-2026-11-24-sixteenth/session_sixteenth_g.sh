#!/usr/bin/env bash
# Sixteenth session, seventh GPU call: the tiles backward's cs launch against cs computed in each tiles program
# (training calls, alternating); the SSD backward's GPU tests with it.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 benchmarks/ab_tiles_cs.py 3 2>&1 | grep -v -i warn | tee "$OUT/ab-tiles-cs.txt"
timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -3
