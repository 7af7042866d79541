#!/usr/bin/env bash
# Twelfth session, final GPU call: the tiles with the pair sums added by atomics (4 scratch planes, not 12) and the
# sweeps kept for few (chunk, head) programs. SSD backward tests on CUDA, bf16 figures, A/B, train bench (carry .whl).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -3
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
timeout 120 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,d,dz --variants sweeps,tiles 2>&1 \
  | grep -v -i warn | tee "$OUT/ab-tiles.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
