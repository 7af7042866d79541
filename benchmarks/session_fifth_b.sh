#!/usr/bin/env bash
# Fifth session, second GPU call: gradient error spread (fp16 dA near its tolerance), the chain backward with
# transposed products (TN), and the training bench against mamba_ssm. Carry .whl. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -25
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m benchmarks.grad_error_spread 5 2>&1 | grep -v Warn | tee "$OUT/grad-spread.txt" | grep worst
timeout 300 python3 benchmarks/tune_ssd_backward.py --chain-tn 2>&1 | tee "$OUT/chain-tn.txt"
