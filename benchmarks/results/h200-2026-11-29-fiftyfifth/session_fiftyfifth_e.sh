#!/usr/bin/env bash
# Fifty-fifth session, call 5 (about 320 s): the packed forward's rows without segments (the configuration's segment
# 0: every row a whole sequence) compiled without the hand-over code (SEGMENTS False). Call 4 found the 64 x ~256
# inference forward at 168 registers with 16 bytes of spills (22dffcb: none), +6.5 %; offline with triton 3.6 (the
# GPU's) at the cap of 168 that kernel goes from 3088 instructions and 60 bytes of spills to 1720 and none.
# A/B against 2f6816b's scan.py (carried as scan_base_2f6816b.py, from
# `git show 2f6816b:flashssm/ops/selective_scan/scan.py`: the device's git lacked this session's commits; the copy is
# not kept in the repository) on
# the two packed workloads whose forward has no segments, then the GPU's packed tests.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
D=benchmarks/results/h200-2026-11-29-fiftyfifth
timeout 200 python3 benchmarks/ab_scan_code.py --old $D/scan_base_2f6816b.py --rounds 5 m1train-2.8b-packed-64x256 \
  m1train-2.8b-packed-mix > "$OUT/e/ab-code.txt" 2>&1
echo "ab rc $?"; grep -E "^m1|ms|regs|difference|Error" "$OUT/e/ab-code.txt" | tail -14 | cut -c1-420
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -n 14 tests/ops/test_selective_scan.py \
  -k "packed_nan or varlen or clean_chunks" > "$OUT/e/tests.txt" 2>&1
echo "pytest rc $?"; tail -3 "$OUT/e/tests.txt"
