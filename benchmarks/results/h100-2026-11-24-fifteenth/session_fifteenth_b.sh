#!/usr/bin/env bash
# Fifteenth session, second and third GPU calls (after reverting the own-state form): the forward's new
# small-dt test with the tests it sits beside, on the GPU (bf16 included); the backward's per-kernel costs
# with some gradients not asked for (how much of the pair launch the decay gradient's pair sums take).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -p no:cacheprovider -q -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  -k "small_dt or both_publish or entering_states" 2>&1 | tail -4
timeout 250 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096 2>&1 | grep -v -i warn | tee "$OUT/costs.txt"
