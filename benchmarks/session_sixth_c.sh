#!/usr/bin/env bash
# (Ran against the kernel of benchmarks/results/h100-2026-11-23-sixth/tf32-rn-split.diff: its TF32_RN and
# TF32_SPLIT modes and RN_MASK were not kept; the SPLIT mask is now SPLIT_MASK, numbered without the dy bit.)
# Sixth session, third GPU call: the chain backward with every path seeing the same rounded dy, in its SPLIT
# mode (16-bit hi + lo products; all of them, or only those the decay gradient depends on: RN_MASK 567) and
# TF32_SPLIT, against TF32 (the default so far): gradient errors on test_gpu_real_shapes' shape (fp16, bf16)
# and at 2x4K of the 2.7B shape (bf16), and the backward's time on the train shapes. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
timeout 300 python3 -m benchmarks.grad_error_spread 3 --no-mamba --chain tf32 --chain split:1023 --chain split:567 \
  --chain tf32_split:567 2>&1 | grep -v Warn | tee "$OUT/grad-spread-consistent.txt" | grep worst
timeout 250 python3 benchmarks/tune_ssd_backward.py --chain-modes \
  --variants tf32/16,split:1023/16,split:567/16,split:567/32,tf32_split:567/16 2>&1 | tee "$OUT/chain-consistent.txt"
