#!/usr/bin/env bash
# Seventy-second session, sixth call. One H200, ~200 s. The decoding steps (ssd_step, selective_scan_step,
# causal_conv1d_update) as custom ops while torch.compile traces them (ops/step_ops.py, the new default): their GPU
# tests, the traced-launch form beside it (test_steps_under_torch_compile[kernel]: do the fixed strides show with
# inputs sliced from a projection inside the compiled function?), a model's compiled decoding step against eager.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 240 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  --dist worksteal tests/ops/test_step.py tests/ops/test_conv1d.py tests/models/test_models.py \
  tests/ops/test_checks.py > "$OUT/tests.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -1 "$OUT/tests.txt"
grep -E "^E  " "$OUT/tests.txt" | head -20
