#!/usr/bin/env bash
# Thirty-eighth session, call 3 (carry .whl): packed ssd_scan forwards on the Gluon kernel (IS_VARLEN: the spans from
# the Triton kernel's table) and cu_seqlens' host values read once per tensor. (1) The GPU tests of the Gluon kernel,
# of packed sequences in both scans and of the checks; (2) packed against dense again (call 1's table), with each
# training call's kernels.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 230 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py tests/ops/test_selective_scan.py tests/ops/test_checks.py \
  -k "gluon or varlen or packed or cu_seqlens or publish" > "$OUT/call3-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed" "$OUT/call3-tests.txt" | head -20
timeout 200 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan 8x2048 --kernels --rounds 3 \
  > "$OUT/call3-packed.txt" 2>&1
grep -v -i warn "$OUT/call3-packed.txt" | grep -v lengths
