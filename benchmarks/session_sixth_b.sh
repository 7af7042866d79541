#!/usr/bin/env bash
# (Ran against the kernel of benchmarks/results/h100-2026-11-23-sixth/tf32-rn-split.diff: its TF32_RN and
# TF32_SPLIT modes and RN_MASK were not kept; the SPLIT mask is now SPLIT_MASK, numbered without the dy bit.)
# Sixth session, second GPU call: which of the chain backward's products decide the decay gradient's error
# (fp16 dA 1.8e-2 on test_gpu_real_shapes' shape, against 5.6e-4 for the parallel form): rounded (TF32_RN)
# and split (TF32_SPLIT, about 21 bits) operands by product subset. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
timeout 420 python3 -m benchmarks.grad_error_spread 2 --no-mamba --dtypes fp16 --chain tf32 --chain tf32_rn:1023 \
  --chain tf32_split:1023 --chain tf32_split:563 --chain tf32_split:34 --chain tf32_split:528 --chain tf32_split:2 \
  --chain tf32_split:32 2>&1 | grep -v Warn | tee "$OUT/grad-spread-split.txt"
