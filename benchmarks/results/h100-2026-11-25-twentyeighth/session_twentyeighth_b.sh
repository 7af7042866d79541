#!/usr/bin/env bash
# Twenty-eighth session, call 2: every test file on CUDA (all marks) except the SSD forward and backward files, which
# ran on the GPU last session: models and generation, the decoding steps, conv1d, the norms, selective_scan, dispatch,
# launch cache, bench, profile, fuzz smoke; several sessions of kernel changes since these last ran on a GPU.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device2.txt" 2>&1
timeout 560 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests \
  --ignore=tests/ops/test_ssd_backward.py --ignore=tests/ops/test_ssd_forward.py -rs 2>&1 \
  | tee "$OUT/call2-tests-rest.txt" | grep -E "^FAILED|^ERROR|passed|failed|SEED" | head -30
