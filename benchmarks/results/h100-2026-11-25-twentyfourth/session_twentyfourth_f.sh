#!/usr/bin/env bash
# Twenty-fourth session, call 6: the training bench on the final code, peers in the same run (README's table).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 400 python3 -m flashssm bench --json "$OUT/call6-bench.json" -w train-2.7b-1x2K -w train-2.7b-8x4K \
  -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call6-bench.txt" | grep -E "^train|^flashssm|^mamba"
