#!/usr/bin/env bash
# Twenty-first session, eighth GPU call (review): the forward's last state and the backward's dA slices stored through
# `_store_states` like the checkpoints (one-lane programs: 16-byte vectors); the selective-scan GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call8-tests-scan.txt" 2>&1
echo "tests: exit $?"; tail -2 "$OUT/call8-tests-scan.txt"
