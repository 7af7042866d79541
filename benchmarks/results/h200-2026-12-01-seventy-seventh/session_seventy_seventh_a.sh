#!/usr/bin/env bash
# Seventy-seventh session, call 1: the late sweep split between a state warp group and an output warp group
# (forward_gluon.SPLIT, `_ssd_fwd_gluon_split_kernel`): the same bits as the one-warp-group sweep (GPU test), then its
# time against it, alternating in one process (the kernel's time by the profiler).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 240 python3 -m pytest -q -x -m gpu -p no:cacheprovider -o addopts="" tests/ops/test_ssd_forward.py \
  -k "split_same_bits" > "$OUT/tests-split.txt" 2>&1
echo "tests rc $?" >> "$OUT/tests-split.txt"
if grep -q "passed" "$OUT/tests-split.txt" && ! grep -q "failed\|error" "$OUT/tests-split.txt"; then
  timeout 240 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.SPLIT \
    --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --rounds 5 --kernels \
    > "$OUT/ab-split.txt" 2>&1
fi
tail -8 "$OUT"/*.txt
