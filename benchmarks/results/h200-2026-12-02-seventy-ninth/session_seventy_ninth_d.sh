#!/usr/bin/env bash
# Seventy-ninth session, call 4: the forward's output work shared by a channel's lanes (SPLIT_OUT_FWD, the
# backward unchanged): the GPU's forward tests of the selective scan, and the bench's Mamba-1 rows (flashssm against
# the floor).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 220 python3 -m pytest -q -p no:cacheprovider -o addopts= -n 8 tests/ops/test_selective_scan.py \
  -k "forward or output_shared or packed_rows or segments or gpu_bf16_against or gpu_fp32 or gpu_row" \
  > "$OUT/tests-scan.txt" 2>&1
echo "tests rc $?" >> "$OUT/tests-scan.txt"
timeout 200 flashssm bench -w m1-2.8b-8x2K -w m1-n128-8x2K -w m1-2.8b-1x32K -w m1train-2.8b-8x2K -i flashssm \
  > "$OUT/bench-m1.txt" 2>&1
tail -3 "$OUT"/tests-scan.txt; tail -25 "$OUT"/bench-m1.txt
