#!/usr/bin/env bash
# Thirty-seventh session, call 4: a direct launch passing the tensors' addresses as ints (_runtime.POINTER_ADDRESSES):
# the small calls' time (host-bound: the bench's time is the host's), training and forward alone, alternating; 8x4K for
# the GPU side; then the launch, forward and backward tests on the GPU with it on.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 240 python3 benchmarks/ab_train_flag.py flashssm._runtime.POINTER_ADDRESSES --value False --value True \
  --workload 1x2K --workload 1x8K --forward --rounds 7 > "$OUT/call4-ab-addresses.txt" 2>&1
timeout 120 python3 benchmarks/ab_train_flag.py flashssm._runtime.POINTER_ADDRESSES --value False --value True \
  --workload 1x2K --options --forward --rounds 7 > "$OUT/call4-ab-addresses-options.txt" 2>&1
timeout 120 python3 benchmarks/ab_train_flag.py flashssm._runtime.POINTER_ADDRESSES --value False --value True \
  --workload 8x4K --rounds 3 > "$OUT/call4-ab-addresses-8x4K.txt" 2>&1
timeout 300 python3 -m pytest -p no:cacheprovider -n 8 -o addopts="-ra" tests/test_launch.py tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py > "$OUT/call4-tests.txt" 2>&1
cat "$OUT"/call4-ab-*.txt | grep -v -i warn; tail -3 "$OUT/call4-tests.txt"
