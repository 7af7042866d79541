#!/usr/bin/env bash
# Sixteenth session, ninth GPU call (after the review): the tiles' cs now written by the forward's preparation kernel
# (one kernel for both); its A/B again and the SSD GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/ab_tiles_cs.py 3 --workloads 8x4096,1x32768 2>&1 | grep -v -i warn | tee "$OUT/ab-tiles-cs.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  tests/ops/test_ssd_forward.py -k "tiles or steep or gpu or pre_decays" 2>&1 | tee "$OUT/tests.txt" | tail -2
