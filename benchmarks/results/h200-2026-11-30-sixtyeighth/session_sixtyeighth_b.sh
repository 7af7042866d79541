#!/usr/bin/env bash
# Sixty-eighth session, call 2 (two H200s of one host): the whole test suite on the GPU, the first time since the
# fifty-third session (fifteen sessions of changes since: the norm kernels' residual add, layouts and pipelined rows,
# the grad sink now on, the Gluon forward's forms, the backward's launches). GPU 0: both SSD test files; GPU 1:
# everything else. The peers' wheels (mamba_ssm, fla) installed so their comparisons run too.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpus.txt"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/gpus.txt"
ARGS=(-q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 --dist worksteal)
CUDA_VISIBLE_DEVICES=0 timeout 540 python3 -m pytest "${ARGS[@]}" tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py > "$OUT/tests-ssd.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 540 python3 -m pytest "${ARGS[@]}" tests --ignore tests/ops/test_ssd_forward.py \
  --ignore tests/ops/test_ssd_backward.py > "$OUT/tests-rest.txt" 2>&1 &
wait
for f in tests-ssd tests-rest; do
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed|Timeout" "$OUT/$f.txt" | tail -15
done
