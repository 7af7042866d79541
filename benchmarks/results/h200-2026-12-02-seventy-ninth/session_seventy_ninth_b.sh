#!/usr/bin/env bash
# Seventy-ninth session, call 2: the selective scan's output work shared by a channel's lanes (SPLIT_OUT_FWD,
# SPLIT_OUT_BWD; the forward's y and the backward's du, ddelta, dz the same bits), against the tile's own layout, which
# repeats it on every lane: A/B alternating in one process (forward alone, forward storing states, backward), then the
# GPU tests of the selective scan with both on.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 200 python3 benchmarks/ab_scan_flag.py --flag SPLIT_OUT_FWD --rounds 5 m1-2.8b-8x2K m1train-2.8b-2x16K \
  > "$OUT/ab-split-fwd.txt" 2>&1
timeout 220 python3 benchmarks/ab_scan_flag.py --flag SPLIT_OUT_BWD --rounds 5 m1train-2.8b-8x2K m1train-2.8b-1x32K \
  > "$OUT/ab-split-bwd.txt" 2>&1
timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts= -n 8 tests/ops/test_selective_scan.py \
  > "$OUT/tests-scan.txt" 2>&1
echo "tests rc $?" >> "$OUT/tests-scan.txt"
tail -12 "$OUT"/ab-split-fwd.txt; tail -12 "$OUT"/ab-split-bwd.txt; tail -5 "$OUT"/tests-scan.txt
