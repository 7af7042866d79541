#!/usr/bin/env bash
# Twentieth session, second GPU call: A/B of B/C rows loaded a slot ahead and of the stored states in (dstate, dim)
# planes (benchmarks/ab_scan_ahead.py), at the Mamba-1 training workloads.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 560 python3 benchmarks/ab_scan_ahead.py m1train-2.8b-8x2K m1train-n128-1x1K m1train-n128-1x1K@256 \
  m1train-130m-1x8K m1train-2.8b-1x32K 2>&1 | grep -v Warn | tee "$OUT/call2-ab-ahead.txt"
