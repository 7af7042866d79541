#!/usr/bin/env bash
# Seventy-sixth session, call 1: how much of the Gluon forward's sweep the m x products' second 16-bit part costs
# (forward_gluon.M_SPLIT: 2 = m_hi and m_lo, the kernel's; 1 = m_hi alone; 0 = no m x product, a wrong y: the ceiling
# of the whole in-chunk product), the kernel's time and y's error for each.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 300 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.M_SPLIT --value 2 --value 1 --value 0 \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x128K --workload 2.7b-8x4K-layer --rounds 5 --kernels \
  > "$OUT/ab-msplit.txt" 2>&1
timeout 120 python3 benchmarks/ab_forward_accuracy.py flashssm.ops.ssd.forward_gluon.M_SPLIT --value 2 --value 1 \
  > "$OUT/acc-msplit.txt" 2>&1
tail -5 "$OUT"/*.txt
