#!/usr/bin/env bash
# Thirty-second session, call 3 (H100): call 2 found fewer, longer early-publish spans faster at batch 1 (1x8K 1280
# programs of 2 chunks 0.1966 ms, 320 of 10 chunks 0.1795), against the span rule's "at least four waves". Here every
# batch-1 workload over spans from the rule's to one wave or less: alternating in one process, medians of 7.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call3-gpu.txt"
timeout 560 python3 benchmarks/ab_gluon_forward.py --rounds 7 --workload 2.7b-1x8K --workload 2.7b-1x32K \
  --workload 2.7b-1x128K --groups 4,8,11,16,32,43,64,128,171 2>&1 | grep -v Warn | tee "$OUT/call3-ab-groups.txt"
