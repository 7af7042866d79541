#!/usr/bin/env bash
# Tenth session, GPU call on the code to commit (the chain backward at one pipeline stage): every test of the
# SSD backward file on CUDA, the bf16 gradient figures, an alternating A/B of 1 and 2 stages (ab_chain_stages.py),
# and the train bench against mamba_ssm (carry .whl). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures 2>&1 \
  | grep "relative error" | tee "$OUT/bwd-errors.txt"
timeout 150 python3 benchmarks/ab_chain_stages.py 3 2>&1 | grep -v -i warn | tee "$OUT/ab-stages.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
