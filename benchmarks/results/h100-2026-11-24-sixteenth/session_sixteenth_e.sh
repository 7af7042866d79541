#!/usr/bin/env bash
# Sixteenth session, fifth GPU call (carry .whl): the final bench, forward and training, against mamba_ssm and fla;
# the SSD forward GPU tests as committed.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
bash benchmarks/gpu_run.sh bench -- -w 2.7b-1x2K -w 2.7b-1x8K -w 2.7b-1x32K -w 2.7b-1x128K -w 2.7b-8x4K \
  -w 2.7b-32x2K -w accuracy-2x1K -w train-2.7b-1x2K -w train-2.7b-8x4K -w train-2.7b-1x32K \
  -i flashssm -i flashssm-fp16-states -i mamba_ssm -i fla 2>&1 | tail -60
rm -f "$OUT/bench.png"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/tests-fwd.txt" | tail -2
