#!/usr/bin/env bash
# Compile-ahead (`_runtime.plan_ahead`): a training forward that compiles queues its backward's kernels to background
# threads. 1) its GPU tests (the backward compiles nothing new after the forward; gradients); 2) the first training
# call's wall time in fresh processes with empty Triton caches, ahead on and off (`benchmarks/first_call.py`).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nproc; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
timeout 280 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 3 -m gpu \
  tests/test_compile_ahead.py > "$OUT/b/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed|Error" "$OUT/b/tests.txt" | tail -12
timeout 300 python3 benchmarks/first_call.py m1train-2.8b-8x2K train-2.7b-8x4K 2>&1 | tee "$OUT/b/first_call.txt"
