#!/usr/bin/env bash
# Thirteenth session, second GPU call: H and dH stored in the input dtype for the tiles (NARROW_STATES), the pair
# launch's per-head decays a head ahead. Per-kernel costs against the previous commit (carry build/base: HEAD's
# flashssm), the backward test file, bf16 error figures.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for i in 1 2; do
  PYTHONPATH=$PWD/build/base:$PWD timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096 2>&1 \
    | grep -v -i warn | sed 's/^/base /' | tee -a "$OUT/costs.txt"
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096 2>&1 \
    | grep -v -i warn | sed 's/^/new  /' | tee -a "$OUT/costs.txt"
done
export PYTHONPATH=$PWD
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -3
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
