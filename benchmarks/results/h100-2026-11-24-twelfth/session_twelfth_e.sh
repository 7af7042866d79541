#!/usr/bin/env bash
# Twelfth session, last GPU call on the code to commit (the chain backward's gradients in tiles by default): the SSD
# backward tests on CUDA, the bf16 gradient figures, 1x2K A/B of the tiles (pair launch head blocks by the grid rule)
# against the sweeps, the train bench against mamba_ssm (carry .whl). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
timeout 60 python3 benchmarks/ab_tiles.py 5 --profile --shapes 1x2048 --opts none,d,dz --variants sweeps,tiles 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-tiles-1x2K.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
