#!/usr/bin/env bash
# Thirty-fourth session, call 3 (H100): with the states stored by the forward (STATES_AT 1, the default now), (1) where
# a training call's GPU time goes, kernel by kernel (8x4K, 1x32K); (2) the test files other than the SSD backward's
# on the GPU (the models' training paths take the stored states too): the forward file whole, models, dispatch;
# (0) first, 1x32K's training call with the tiles in chunks of 128 (the states from the forward: no recompute's
# hand-overs to double), its time and peak memory.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 80 python3 benchmarks/ab_train_states.py --workload 1x32K --rounds 3 --tiles-chunk 128 2>&1 \
  | grep -v Warn | tee "$OUT/call3-ab-chunk128.txt"
timeout 100 python3 benchmarks/train_kernel_times.py --workload 8x4K --workload 1x32K 2>&1 | grep -v Warn \
  | tee "$OUT/call3-kernels.txt"
timeout 300 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py tests/models \
  tests/ops/test_dispatch.py tests/test_launch.py > "$OUT/call3-tests.txt" 2>&1
tail -12 "$OUT/call3-tests.txt"
