#!/usr/bin/env bash
# Call 5's models ran their second step slower with compile-ahead on (Mamba-2 130M 227 against 82 ms, Mamba-1 83
# against 68): five steps after the first, their median, and whether a planner ran after the first step.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/f"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/first_call.py model:mamba2-130m:4x2048 model:mamba1-130m:4x2048 --settings on,off \
  --steps 5 2>&1 | tee "$OUT/f/first_call.txt"
