#!/usr/bin/env bash
# Twenty-fifth session, call 4: the training bench on this code, peers in the same run; then the backward alone,
# the new defaults against the previous ones (paths at two stages; the deterministic mode in two buffers at 256).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 330 python3 -m flashssm bench --json "$OUT/call4-bench.json" -w train-2.7b-1x2K -w train-2.7b-8x4K \
  -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call4-bench.txt" | grep -E "^train|^flashssm|^mamba"
timeout 200 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048 --opts none,dz --memory \
  --variants tiles:j2,tiles,tiles:det:i0:j2:k256,tiles:det 2>&1 | grep -v Warn | tee "$OUT/call4-ab-defaults.txt" \
  | grep -v "^  " | grep -v warn_once
