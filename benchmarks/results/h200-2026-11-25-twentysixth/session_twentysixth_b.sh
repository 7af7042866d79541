#!/usr/bin/env bash
# Twenty-sixth session, call 2: the training bench on this code (pair products in halves), peers in the same run;
# then what the decay gradient's sums cost each launch of the backward (noda: no ddt, dA), per kernel.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 330 python3 -m flashssm bench --json "$OUT/call2-bench.json" -w train-2.7b-1x2K -w train-2.7b-8x4K \
  -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call2-bench.txt" | grep -E "^train|^flashssm|^mamba|^ "
timeout 150 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:noda 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call2-ab-noda.txt"
