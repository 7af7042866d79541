#!/usr/bin/env bash
# Nineteenth session, fifth GPU call: the training bench with mamba_ssm in the same run (the second call lacked its
# wheel), and the GPU test suite on the final code (every file but the SSD backward's, which ran in call 1 and whose
# deterministic tests ran on the new allocation in call 2).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 170 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i flashssm-deterministic -i mamba_ssm 2>&1 | tee "$OUT/call5-bench.txt" | grep -E "^train|^flashssm|^mamba"
timeout 390 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests \
  --ignore=tests/ops/test_ssd_backward.py 2>&1 | tee "$OUT/call5-tests.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" \
  | head -30
