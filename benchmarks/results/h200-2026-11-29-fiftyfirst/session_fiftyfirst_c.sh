#!/usr/bin/env bash
# Fifty-first session, call 3: the 1x2K training call is GPU-bound now that its backward replays (call 2: host 665 us,
# GPU 701 us a call). (1) its kernels by the profiler, plain and with D, dt_bias and softplus; (2) the tiles at 1x2K
# (use_tiles' TILES_MIN_WAVES 8 -> 4 or 0: their extra launches' host time, the reason for the rule, is replayed
# now), A/B over the training call; (3) GPU tests the autograd change touches: models, compile-ahead, custom-op
# layouts, prepared calls.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 6 \
  tests/models tests/test_compile_ahead.py tests/ops/test_custom_op_layouts.py tests/test_prepared.py \
  > "$OUT/c/tests-others.txt" 2>&1 &
timeout 60 python3 benchmarks/train_kernel_times.py --workload 1x2K > "$OUT/c/kernels-1x2K.txt" 2>&1
timeout 60 python3 benchmarks/train_kernel_times.py --workload 1x2K --options > "$OUT/c/kernels-1x2K-options.txt" 2>&1
cat "$OUT/c/kernels-1x2K.txt" "$OUT/c/kernels-1x2K-options.txt"
wait
grep -E "FAILED|ERROR|passed|failed" "$OUT/c/tests-others.txt" | tail -8
timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.TILES_MIN_WAVES --value 8 --value 4 \
  --workload 1x2K --rounds 5 --peak > "$OUT/c/ab-tiles-1x2K.txt" 2>&1
cat "$OUT/c/ab-tiles-1x2K.txt"
timeout 100 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_chain.TILES_MIN_WAVES --value 8 --value 4 \
  --workload 1x2K --rounds 5 --options --peak > "$OUT/c/ab-tiles-1x2K-options.txt" 2>&1
cat "$OUT/c/ab-tiles-1x2K-options.txt"
