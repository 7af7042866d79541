#!/usr/bin/env bash
# Thirty-eighth session, call 1 (carry .whl): (1) packed sequences (cu_seqlens) against the same tokens as a dense
# batch, ssd_scan and selective_scan, forward and forward + backward, mamba_ssm's seq_idx form beside ours
# (benchmarks/packed_vs_dense.py); (2) every GPU test file the last session did not run with the direct launch's
# addresses (POINTER_ADDRESSES): selective scan, steps, conv1d, norms, dispatch, checks, models, bench, profile, fuzz.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan 8x2048 --scan 64x256 \
  > "$OUT/call1-packed.txt" 2>&1
grep -v -i warn "$OUT/call1-packed.txt"
timeout 360 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  tests/ops/test_selective_scan_reference.py tests/ops/test_step.py tests/ops/test_conv1d.py tests/ops/test_norm.py \
  tests/ops/test_dispatch.py tests/ops/test_checks.py tests/ops/test_triton_common.py tests/models tests/bench \
  tests/profile tests/fuzz tests/test_readme.py > "$OUT/call1-tests.txt" 2>&1
tail -8 "$OUT/call1-tests.txt"
