#!/usr/bin/env bash
# Seventeenth session, sixth GPU call: the final code: the SSD forward and model tests on the GPU (forward.launch
# takes the states buffer; the transformers switch takes 'cache'), the clamp cases for 40 seeds again, and the 1x2K
# bench twice against mamba_ssm (the host's noise moves these ratios run to run).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py tests/models \
  2>&1 | tee "$OUT/call6-tests-fwd-models.txt" | grep -E "^FAILED|passed|failed|SEED"
timeout 100 python3 -m benchmarks.repeat_ssd_backward_options 40 2>&1 | grep -E "fails|^ +\(" | tee "$OUT/call6-repeat.txt"
for run in 1 2; do
  bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w 2.7b-1x2K -w train-2.7b-8x4K -i flashssm -i mamba_ssm 2>&1 \
    | grep -A4 "^train\|^2.7b" | grep -v "^peak"
  cp "$OUT/bench.txt" "$OUT/call6-bench-$run.txt"; rm -f "$OUT/bench.png" "$OUT/bench.txt" "$OUT/bench.json"
done
