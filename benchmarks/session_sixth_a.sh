#!/usr/bin/env bash
# (Ran against the kernel of benchmarks/results/h100-2026-11-23-sixth/tf32-rn-split.diff: its TF32_RN and
# TF32_SPLIT modes and RN_MASK were not kept; the SPLIT mask is now SPLIT_MASK, numbered without the dy bit.)
# Sixth session, first GPU call: the chain backward's products with their computed operands rounded to
# tf32 (TF32_RN, by RN_MASK subset) against plain TF32 (truncated operands): the rounding's unit test and the
# mode tests on CUDA, the gradient error spread on test_gpu_real_shapes' shape, and the backward's time on the
# train shapes. No peers needed. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/env.txt"
timeout 100 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_triton_common.py \
  tests/ops/test_ssd_backward.py -k "round_tf32 or product_modes or real_shapes" 2>&1 | tee "$OUT/tests-rn.txt" | tail -6
timeout 250 python3 -m benchmarks.grad_error_spread 3 --no-mamba --chain tf32 --chain tf32_rn:1023 --chain tf32_rn:529 \
  --chain tf32_rn:34 --chain tf32_rn:567 2>&1 | grep -v Warn | tee "$OUT/grad-spread-rn.txt" | grep worst
timeout 220 python3 benchmarks/tune_ssd_backward.py --chain-modes \
  --variants tf32/16,tf32_rn:1023/16,tf32_rn:529/16,tf32_rn:567/16 2>&1 | tee "$OUT/chain-rn.txt"
