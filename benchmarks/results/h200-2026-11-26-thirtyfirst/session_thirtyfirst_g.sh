#!/usr/bin/env bash
# Thirty-first session, call 7 (H100): longer spans for the early form? The thirtieth session found longer spans faster
# up to the table's cap (2048 tokens, 8 chunks of 256); this times 4096 and 8192 (16 and 32 chunks) at batch 1, with
# the package's span and the Triton kernel in the same run.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 300 python3 benchmarks/ab_gluon_forward.py --groups 4,16,32 --workload 2.7b-1x128K --workload 2.7b-1x32K \
  --workload 2.7b-8x4K 2>&1 | grep -v Warn | tee "$OUT/call7-ab-groups.txt"
