#!/usr/bin/env bash
# (Ran on a working tree with the rounded one-wave rule in forward.py, a first form of one-wave-runtime-span.diff;
# neither landed.)
# Thirty-second session, call 4 (H100): the one-wave span rule as first tried (`forward._group_one_wave`: three spans a
# sequence, rounded up to 2^k or 3 2^(k-1) chunks: 1x2K 3, 1x8K 12, 1x32K 48, 1x128K 192) against the previous rule's
# spans (1x2K 1, 1x8K 2, 1x32K 8, 1x128K 32), for the Gluon kernel and the Triton kernel (other GPUs' path),
# alternating in one process, medians of 7.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call4-gpu.txt"
timeout 560 python3 benchmarks/ab_gluon_forward.py --rounds 7 --workload 2.7b-1x2K --workload 2.7b-1x8K \
  --workload 2.7b-1x32K --workload 2.7b-1x128K --groups 1,2,8,32 --triton-groups 2>&1 | grep -v Warn \
  | tee "$OUT/call4-ab-rule.txt"
