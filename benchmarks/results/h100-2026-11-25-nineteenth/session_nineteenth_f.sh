#!/usr/bin/env bash
# Nineteenth session, sixth GPU call (the fifth call's bench ran out of its time limit before 1x32K): the same bench at 1x32K.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site
timeout 200 python3 -m flashssm bench -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call6-bench-1x32K.txt" | grep -E "^train|^flashssm|^mamba"
