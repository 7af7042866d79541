#!/usr/bin/env bash
# Seventh session, fourth GPU call, on the committed code: the selective-scan tests on CUDA (every mark:
# the new lane choice and the segment helpers), the SSD forward tests (the ticket and workspace helpers
# moved), then the bench of the Mamba-1 workloads. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 210 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tee "$OUT/tests-scan.txt" | tail -3
timeout 170 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py 2>&1 \
  | tee "$OUT/tests-ssd-forward.txt" | tail -3
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1train-2.8b-8x2K \
  -i flashssm 2>&1 | tail -20
