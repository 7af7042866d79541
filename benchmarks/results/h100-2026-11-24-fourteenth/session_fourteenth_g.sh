#!/usr/bin/env bash
# Fourteenth session, seventh GPU call: the final defaults (paths launch in blocks of 128, registers uncapped): per
# kernel, the backward's GPU tests, bf16 error figures, the training bench against mamba_ssm (carry .whl).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 2>&1 | grep -v -i warn | grep " all:" \
  | tee "$OUT/costs.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
