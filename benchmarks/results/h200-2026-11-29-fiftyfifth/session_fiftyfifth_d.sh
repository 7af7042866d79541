#!/usr/bin/env bash
# Fifty-fifth session, call 4 (about 380 s): the open +6 % of the 64 x ~256 inference forward since the packed NaN fix
# (call 1's A/B was cut by its 150 s timeout inside the compiles): the forward alone against 22dffcb, with the
# inference forward's registers on the GPU.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
git show 22dffcb:flashssm/ops/selective_scan/scan.py > /tmp/scan_old.py
timeout 340 python3 benchmarks/ab_scan_code.py --old /tmp/scan_old.py --rounds 5 m1train-2.8b-packed-64x256 \
  > "$OUT/d/ab-code.txt" 2>&1
echo "ab rc $?"; grep -E "^m1|ms|regs|Error" "$OUT/d/ab-code.txt" | tail -12 | cut -c1-400
