#!/usr/bin/env bash
# Thirtieth session, call 7 (carry .whl): the training path with the early Gluon forward (batch-1 forwards that do not
# store the chunk states take it). The SSD backward GPU tests, then the training bench with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 260 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  > "$OUT/call7-tests-bwd.txt" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/call7-tests-bwd.txt" | tail -20
timeout 200 python3 -m flashssm bench --json "$OUT/call7-bench-train.json" -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -w train-2.7b-1x2K -i flashssm -i mamba_ssm > "$OUT/call7-bench-train.txt" 2>&1
grep -E "^train|^flashssm|^mamba|^impl" "$OUT/call7-bench-train.txt"
