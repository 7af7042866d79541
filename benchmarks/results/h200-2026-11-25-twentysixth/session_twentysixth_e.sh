#!/usr/bin/env bash
# Twenty-sixth session, call 5: the training bench on this code (column sums from the bracket), peers in the same
# run; then the pair launch, which now sums rows only, at 4 warps (a warpgroup holds whole rows of its tile: the row
# sums need no cross-warp trip) against 8, capped at 128 and 168 registers.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/device5.txt" 2>&1
timeout 330 python3 -m flashssm bench --json "$OUT/call5-bench.json" -w train-2.7b-1x2K -w train-2.7b-8x4K \
  -w train-2.7b-1x32K -i flashssm -i flashssm-deterministic -i mamba_ssm 2>&1 \
  | tee "$OUT/call5-bench.txt" | grep -E "^train|^flashssm|^mamba|^ "
timeout 150 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:v4,tiles:v4:q168 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call5-ab-pair-warps.txt"
