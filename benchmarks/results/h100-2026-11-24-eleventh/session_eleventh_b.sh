#!/usr/bin/env bash
# Eleventh session, second GPU call: the chain backward's kernels one by one (tune_ssd_backward.py
# --chain-launches), then the train bench against mamba_ssm (carry .whl). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/tune_ssd_backward.py --chain-launches 2>&1 | grep -v -i warn | tee "$OUT/chain-launches.txt"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm \
  2>&1 | tail -14
rm -f "$OUT/bench.png"
