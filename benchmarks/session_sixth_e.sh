#!/usr/bin/env bash
# Sixth session, fifth GPU call: the backward's tests on CUDA (every mark) with the SPLIT default, then the
# training bench (forward + backward) against mamba_ssm and fla. Carry .whl. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
timeout 290 env PYTHONPATH=$PWD python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" \
  tests/ops/test_ssd_backward.py 2>&1 | tee "$OUT/tests-bwd.txt" | tail -6
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm \
  -i mamba_ssm -i fla 2>&1 | tail -30
