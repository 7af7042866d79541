#!/usr/bin/env bash
# Tenth session, first GPU call: the two-sweep SSD backward (ops/ssd/backward_sweeps.py). Its GPU tests (every
# test of the backward file that runs the sweeps form, and the decay-gradient accuracy test), its gradient errors
# and its backward times against the chain form over launch configurations (tune_ssd_backward.py --sweeps),
# and the offline resource figures of the configurations timed. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  -k "sweeps or decay_gradient" -rf 2>&1 | tee "$OUT/tests-sweeps.txt" | tail -4
timeout 330 python3 benchmarks/tune_ssd_backward.py --sweeps "${SWEEPS:-32/4/4/0,32/8/4/0,32/8/8/0,16/4/4/0,32/4/4/1}" \
  2>&1 | tee "$OUT/tune-sweeps.txt"
