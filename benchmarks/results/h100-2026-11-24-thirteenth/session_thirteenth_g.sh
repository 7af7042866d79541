#!/usr/bin/env bash
# Thirteenth session, seventh GPU call: heads a program of the pair launch (it sums all 80 of the group's: 1280
# programs at 8x4K, 4.8 waves of 264), then the train bench against mamba_ssm (carry .whl) and bf16 error figures.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none --profile \
  --variants tiles,tiles:h40,tiles:h27,tiles:h20 2>&1 | grep -v -i warn | tee "$OUT/ab-heads.txt"
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
