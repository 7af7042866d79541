#!/usr/bin/env bash
# Sixth session, fourth GPU call: the chain backward's SPLIT mode (every path seeing the same rounded dy) at
# SUB 32, every product split (SPLIT_ALL) or only those the decay gradient depends on (283), against TF32 at
# SUB 16 (the default before): time on the train shapes and errors at 2x4K; then the error spread of the
# default on test_gpu_real_shapes' shape against the parallel form and mamba_ssm. Carry .whl. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
timeout 250 python3 benchmarks/tune_ssd_backward.py --chain-modes \
  --variants tf32/16,split:511/32,split:283/32,split:511/16 2>&1 | tee "$OUT/chain-split32.txt"
timeout 300 python3 -m benchmarks.grad_error_spread 3 2>&1 | grep -v Warn | tee "$OUT/grad-spread-default.txt" | grep worst
