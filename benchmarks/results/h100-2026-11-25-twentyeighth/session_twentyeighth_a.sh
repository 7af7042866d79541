#!/usr/bin/env bash
# Twenty-eighth session, call 1: part of the Mamba-1 forward's decays by exp2_fma (FMA pipe) instead of the MUFU
# (`scan.POLY_EVERY`, by the forward's lanes: every n-th decay of the first pass, of the output pass). The tests of
# exp2_fma and of the forward with it on, then an A/B of several shares: one lane a channel (batch 1, segments: MUFU
# 1152 clocks a tile against 749 issue in the first pass, 1280 / 1044 in the output pass, offline SASS) and two
# lanes (8x2K: balanced, 736 / 706).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
timeout 300 python3 -m pytest -n 4 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_triton_common.py \
  tests/ops/test_selective_scan.py -k "exp2_fma or fma_pipe or softplus" 2>&1 | tee "$OUT/call1-tests.txt" \
  | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 300 python3 benchmarks/ab_scan_flag.py --flag POLY_EVERY --rounds 5 \
  --value '{}' --value '{1: (6, 10)}' --value '{1: (8, 16)}' --value '{1: (4, 8)}' --value '{1: (6, 0)}' --value '{1: (0, 10)}' \
  m1-2.8b-1x32K m1-130m-1x32K m1train-2.8b-1x32K 2>&1 | grep -v -i warn | tee "$OUT/call1-ab-poly-one-lane.txt"
timeout 120 python3 benchmarks/ab_scan_flag.py --flag POLY_EVERY --rounds 5 \
  --value '{}' --value '{2: (0, 16)}' --value '{2: (0, 32)}' --value '{2: (0, 8)}' m1-2.8b-8x2K 2>&1 | grep -v -i warn \
  | tee "$OUT/call1-ab-poly-two-lanes.txt"
