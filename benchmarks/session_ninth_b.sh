#!/usr/bin/env bash
# Ninth session, second GPU call. (1) The selective-scan forward's late hand-over (ForwardConfig.hand_late):
# where the channels fill the GPU already, its grid of one-warp programs runs in whole waves (8x2K at two
# lanes: 2560 programs, 1.62 waves of the 1584 that fit at 168 registers, so the second wave is 62 % full);
# segments handed on after the output pass (no first pass) cut the programs shorter so the last wave wastes
# less. Sweep segment lengths against none. (2) The GPU tests of segments (both hand-overs). (3) The SSD
# backward with its state recompute in steps of 128 (entering_states' default now): the GPU tests that run
# it, the bf16 gradient figures, and forward + backward against mamba_ssm at 8x4K. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/env.txt"
timeout 230 python3 benchmarks/tune_scan_segments.py --forward \
  8x2048x5120:2,1,0,8,168 8x2048x5120:2,1,-1024,8,168 8x2048x5120:2,1,-512,8,168 8x2048x5120:2,1,-256,8,168 \
  8x2048x5120:2,1,-128,8,168 \
  4x8192x5120:2,1,0,8,168 4x8192x5120:2,1,-4096,8,168 4x8192x5120:2,1,-2048,8,168 4x8192x5120:2,1,-1024,8,168 \
  4x8192x5120:2,1,-512,8,168 \
  16x2048x5120:2,1,0,8,168 16x2048x5120:2,1,-1024,8,168 16x2048x5120:2,1,-512,8,168 16x2048x5120:2,1,-256,8,168 \
  32x2048x5120:2,1,0,8,168 32x2048x5120:2,1,-512,8,168 32x2048x5120:2,1,-256,8,168 \
  2>&1 | tee "$OUT/tune-late.txt"
timeout 120 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  -k "segments" 2>&1 | tee "$OUT/tests-scan-segments.txt" | tail -3
timeout 150 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  tests/ops/test_ssd_forward.py -k "spans or real_shapes or varlen_real or entering_states" 2>&1 \
  | tee "$OUT/tests-ssd-states.txt" | tail -3
timeout 60 python3 -m pytest -p no:cacheprovider -s -m gpu tests/ops/test_ssd_backward.py -k bf16_error_figures \
  2>&1 | tee "$OUT/bwd-errors.txt" | grep "relative error"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-8x4K -w train-2.7b-1x32K -i flashssm -i mamba_ssm 2>&1 | tail -12
rm -f "$OUT/bench.png"
