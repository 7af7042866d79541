#!/usr/bin/env bash
# Twenty-fifth session, call 5: the paths launch at four stages and other head blocks (backward alone, 8x4K and
# 1x32K); the 1x2K training call again (call 4's deterministic figure there was 2.25 ms against 1.56 before).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 250 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:j4,tiles:e10,tiles:e10:j4,tiles:e40:j4 2>&1 | grep -v Warn | grep -v warn_once \
  | tee "$OUT/call5-ab-paths.txt"
for i in 1 2; do
timeout 100 python3 -m flashssm bench -w train-2.7b-1x2K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call5-bench-1x2K-$i.txt" | grep -E "^train|^flashssm|^mamba"
done
