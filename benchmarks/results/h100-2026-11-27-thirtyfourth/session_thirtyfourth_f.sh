#!/usr/bin/env bash
# Thirty-fourth session, call 6 (H100): the final code (the store's A/B switch removed; the kernel is the one
# STATES_AT 1 compiled): the Gluon forward tests and the stored states' tests, forward and backward, and the A/B once
# more at 8x4K and 1x32K.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 240 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py -k "sweep_states or gluon or tiles_states or early_halves or every_option" \
  > "$OUT/call6-tests.txt" 2>&1
tail -4 "$OUT/call6-tests.txt"
timeout 120 python3 benchmarks/ab_train_states.py --workload 8x4K --workload 1x32K --rounds 3 2>&1 | grep -v Warn \
  | tee "$OUT/call6-ab.txt"
