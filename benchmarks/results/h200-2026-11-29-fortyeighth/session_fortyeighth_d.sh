#!/usr/bin/env bash
# Compile-ahead with one background thread, a launch taking a kernel the thread has not started, and the planners of
# causal_conv1d and rmsnorm_gated: its GPU tests, then a model's first training step (fresh process and Triton cache,
# random weights, bf16), ahead on and off, and the two ops' first calls again.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 3 -m gpu \
  tests/test_compile_ahead.py > "$OUT/d/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed|Error" "$OUT/d/tests.txt" | tail -12
timeout 330 python3 benchmarks/first_call.py model:mamba2-130m:4x2048 model:mamba1-130m:4x2048 \
  train-2.7b-8x4K m1train-2.8b-8x2K --settings on,off 2>&1 | tee "$OUT/d/first_call.txt"
