#!/usr/bin/env bash
# Twenty-seventh session, call 4: with the halves rule final (the recompute at 128 chunks a sequence or more), the GPU
# tests of the SSD backward file, then the training bench with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/device4.txt" 2>&1
timeout 290 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call4-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 280 python3 -m flashssm bench --json "$OUT/call4-bench.json" -w train-2.7b-1x2K -w train-2.7b-8x4K \
  -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call4-bench.txt" | grep -E "^train|^flashssm|^mamba|^ "
