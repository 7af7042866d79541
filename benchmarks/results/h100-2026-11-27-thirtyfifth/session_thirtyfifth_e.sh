#!/usr/bin/env bash
# Thirty-fifth session, call 5 (H100, carry .whl): the final code (paths' decays a head ahead, the carry from the
# chain launch). (1) The training bench with mamba_ssm in the same run, both modes, and with D, dt_bias and softplus
# (an A/B of the carry there: the realistic layer call); (2) the SSD backward file whole and the models' tests on
# the GPU.
set -uo pipefail
OUT=${OUT:-out}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 -m flashssm bench --json "$OUT/call5-bench-train.json" -w train-2.7b-1x32K -w train-2.7b-1x2K \
  -w train-2.7b-8x4K -i flashssm -i flashssm-deterministic -i mamba_ssm > "$OUT/call5-bench-train.txt" 2>&1
grep -E "^device|^train|^flashssm|^mamba" "$OUT/call5-bench-train.txt"
timeout 280 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_backward.py tests/models \
  > "$OUT/call5-tests.txt" 2>&1
tail -6 "$OUT/call5-tests.txt"
