#!/usr/bin/env bash
# Twenty-ninth session, call 5 (carry .whl): the training path with the Gluon forward (late publish: 8x4K's forward
# takes it). The SSD backward GPU tests, then the training bench with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 290 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call5-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 280 python3 -m flashssm bench --json "$OUT/call5-bench-train.json" -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -w train-2.7b-1x2K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call5-bench-train.txt" | grep -E "^train|^flashssm|^mamba|^ "
