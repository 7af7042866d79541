#!/usr/bin/env bash
# Ninth session, third GPU call, on the committed code: the selective-scan tests on CUDA (every mark: the
# forward now picks late hand-over segments at 8x2K, 16x2K, 4x8K), the picked forwards timed against one
# program a sequence, the Mamba-1 bench (forward and training at 8x2K: the backward reads the states the
# segmented forward stored), and the SSD forward tests (the own-state step). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tee "$OUT/tests-scan.txt" | tail -3
timeout 90 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_selective_scan.py -k bf16_error_figures \
  2>&1 | tee "$OUT/scan-errors.txt" | grep "relative error"
timeout 150 python3 benchmarks/tune_scan_segments.py --forward 8x2048x5120:2,1,0,8,168 16x2048x5120:2,1,0,8,168 \
  4x8192x5120:2,1,0,8,168 32x2048x5120:2,1,0,8,168 2>&1 | tee "$OUT/tune-picked.txt"
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-8x2K -w m1train-2.8b-8x2K -i flashssm 2>&1 | tail -14
rm -f "$OUT/bench.png"
timeout 100 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/tests-ssd-fwd.txt" | tail -3
