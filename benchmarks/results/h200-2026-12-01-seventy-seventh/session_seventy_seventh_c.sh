#!/usr/bin/env bash
# Seventy-seventh session, call 3: forward_gluon.FENCE_EARLY (the late loop's proxy fence for H_sm right after its
# stores, before y's global stores, instead of after the next iteration's cp.async issue), alternating in one process,
# the kernel's time by the profiler, y's bits against the default.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 420 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.FENCE_EARLY \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-8x4K-layer --workload 2.7b-8x4K-fp16 \
  --workload 2.7b-1x32K --workload 2.7b-1x128K --rounds 5 --kernels > "$OUT/ab-fence.txt" 2>&1
grep -v Warn "$OUT/ab-fence.txt" | grep -v warn_once
