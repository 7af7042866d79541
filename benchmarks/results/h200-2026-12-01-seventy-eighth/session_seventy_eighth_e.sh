#!/usr/bin/env bash
# Seventy-eighth session, call 5: the next sub-chunk's C.B^T issued right after the m x products, before the wait
# for them and the update (forward_gluon.CB_EARLY): y the same bits and the kernel's time (the A/B alone: the
# session's device time was nearly spent).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 150 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.CB_EARLY \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x32K --rounds 3 --kernels > "$OUT/ab-cb-early.txt" 2>&1
grep -v "Warn\|warn" "$OUT"/ab-cb-early.txt | tail -12
