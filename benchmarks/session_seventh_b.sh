#!/usr/bin/env bash
# Seventh session, second GPU call: the picked segment configurations (forward_config / backward_config
# after the first call's sweep) against their neighbours, then the bench of the selective scan's workloads
# (and two SSD workloads: the ticket and workspace helpers moved modules). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 230 python3 benchmarks/tune_scan_segments.py \
  --forward 1x32768x5120:1,1,2048 1x262144x5120:1,1,16384 1x32768x1536:2,1,2048 \
            1x2048x5120:1,1,0 1x2048x5120:4,2,0 4x8192x5120:1,1,0 4x8192x5120:4,2,0 \
  --backward 1x32768x5120:4,4096 1x32768x5120:4,0 1x32768x1536:4,0 1x2048x5120:4,0 \
  2>&1 | tee "$OUT/tune-picked.txt"
bash benchmarks/gpu_run.sh bench -- -w m1-2.8b-8x2K -w m1-2.8b-1x32K -w m1-130m-1x32K -w m1train-2.8b-8x2K \
  -w m1train-130m-1x8K -w 2.7b-8x4K -w train-2.7b-8x4K -i flashssm 2>&1 | tail -40
