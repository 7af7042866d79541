#!/usr/bin/env bash
# Twenty-ninth session, call 7 (review): what the barrier-first loop costs, A/B against the kernel before the fix.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/results/h100-2026-11-25-twentyninth/ab_barrier_first.py 2>&1 | grep -v -i warn \
  | tee "$OUT/call7-ab-barrier-first.txt"
