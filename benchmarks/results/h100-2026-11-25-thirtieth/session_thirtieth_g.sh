#!/usr/bin/env bash
# Thirtieth session, call 8: the early Gluon form at shorter spans (chunks a program), whose x would stay in L2 between
# the own-state sweep and the output sweep (benchmarks/ab_gluon_forward.py --groups).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 170 python3 benchmarks/ab_gluon_forward.py --workload 2.7b-1x128K --workload 2.7b-1x32K --rounds 3 \
  --groups 1,2,4 > "$OUT/call8-ab-groups.txt" 2>&1
grep -v -i warn "$OUT/call8-ab-groups.txt"
