#!/usr/bin/env bash
# Sixteenth session, third GPU call (carry .whl): the forward bench against mamba_ssm and fla after the preparation
# launch (early publish only), fp16 states, the accuracy case; the 1M-token check; the forward tests as committed.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
bash benchmarks/gpu_run.sh bench check1m -- -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K \
  -w 2.7b-32x2K -w accuracy-2x1K -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla 2>&1 | tail -40
rm -f "$OUT/bench.png"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 120 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  -k "entering or pre_decays or real_shapes or varlen" 2>&1 | tee "$OUT/tests-fwd.txt" | tail -2
