#!/usr/bin/env bash
# Thirty-first session, call 11 (H100): the three-stage own-state sweep alone: the same kernel with OWN3 off
# (ab_tmp/fg_own2.py: forward_gluon.py with the constexpr's default False) against on, and main's kernel.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_gluon_forward.py --before ab_tmp/fg_own2.py --before ab_tmp/fg_main.py \
  --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K 2>&1 | grep -v Warn | tee "$OUT/call11-ab.txt"
