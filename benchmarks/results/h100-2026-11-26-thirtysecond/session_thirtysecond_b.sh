#!/usr/bin/env bash
# Thirty-second session, call 2 (H100): the early publish's spans sized to just under four waves instead of just over
# (1x128K: 13 spans a head of 40 chunks, 1040 programs, 3.94 waves, against 16 of 32, 1280, 4.85; 1x32K 13 of 10
# against 16 of 8; 1x8K 11 of 3 against 16 of 2), alternating in one process, medians of 7.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/call2-gpu.txt"
timeout 560 python3 benchmarks/ab_gluon_forward.py --rounds 7 --workload 2.7b-1x128K --workload 2.7b-1x32K \
  --workload 2.7b-1x8K --groups 3,10,40 2>&1 | grep -v Warn | tee "$OUT/call2-ab-groups.txt"
