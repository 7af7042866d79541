#!/usr/bin/env bash
# Twenty-fourth session, call 2: the tiles in chunks of 128 by default where the chains are many (TILES_CHUNK):
# backward alone against the forward's 256 (k256), atomic and deterministic, a few pair/paths knobs at 128; then
# the training bench with mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 330 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048 --opts none,d,dz --memory \
  --variants tiles:k256,tiles,tiles:det:k256,tiles:det,tiles:e40,tiles:h40,tiles:o3 2>&1 | grep -v Warn \
  | tee "$OUT/call2-ab-chunk.txt" | grep -v "^  "
timeout 200 python3 -m flashssm bench -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i flashssm-deterministic -i mamba_ssm 2>&1 | tee "$OUT/call2-bench.txt" | grep -E "^train|^flashssm|^mamba|MiB"
