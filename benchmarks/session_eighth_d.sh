#!/usr/bin/env bash
# Eighth session, fourth GPU call, on the committed code: the selective-scan tests on CUDA (every mark: the
# new lane choice and register cap), the bench of the Mamba-1 workloads (flashssm alone; then 8x2K with the
# PyTorch loop, eager and compiled per step), and the picked forward at 1x256K. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tee "$OUT/tests-scan.txt" | tail -3
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1-n128-8x2K \
  -w m1train-2.8b-8x2K -w m1train-130m-1x8K -w m1train-n128-1x1K -i flashssm 2>&1 | tail -34
mv "$OUT/bench.txt" "$OUT/bench-flashssm.txt"; mv "$OUT/bench.json" "$OUT/bench-flashssm.json"; rm -f "$OUT/bench.png"
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-8x2K -i flashssm -i torch -i torch-compiled 2>&1 | tail -8
rm -f "$OUT/bench.png"
timeout 120 python3 benchmarks/tune_scan_segments.py --forward 4x8192x5120:1,1,0,8,168 1x262144x5120:1,1,9088,8,168 \
  2>&1 | tee "$OUT/tune-final.txt"
