#!/usr/bin/env bash
# Call 4's "on" runs again: FLASHSSM_COMPILE_THREADS was set empty there, which the thread count read as an error, so
# every planner failed (its "off" runs stand: same machine kind, fresh process and cache each).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 benchmarks/first_call.py model:mamba2-130m:4x2048 model:mamba1-130m:4x2048 \
  train-2.7b-8x4K m1train-2.8b-8x2K --settings on 2>&1 | tee "$OUT/e/first_call.txt"
