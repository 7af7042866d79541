#!/usr/bin/env bash
# Fifty-sixth session, call 6 (about 420 s): the GPU tests of the kernels whose tickets and flag resets became relaxed
# (call 5 timed them: same y bits): the SSD forward's Gluon and Triton kernels (real shapes, packed, the public path
# and NaN, determinism), the SSD backward (real shapes, packed, deterministic repeats), the selective scan's
# segments, rows and chained forms.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/f"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 tests/ops/test_ssd_forward.py \
  -k "gpu_real_shapes or gpu_varlen_real or gluon_packed or gluon_public_path or deterministic or gluon_forward" \
  > "$OUT/f/tests-ssd-forward.txt" 2>&1
echo "ssd forward rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/f/tests-ssd-forward.txt" | tail -5
timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 tests/ops/test_ssd_backward.py \
  -k "gpu_real_shapes or gpu_varlen_real or gpu_packed_states or gpu_deterministic_repeats" \
  > "$OUT/f/tests-ssd-backward.txt" 2>&1
echo "ssd backward rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/f/tests-ssd-backward.txt" | tail -5
timeout 90 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 tests/ops/test_selective_scan.py \
  -k "segments or packed_rows or chained or packed_nan" > "$OUT/f/tests-scan.txt" 2>&1
echo "scan rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/f/tests-scan.txt" | tail -5
