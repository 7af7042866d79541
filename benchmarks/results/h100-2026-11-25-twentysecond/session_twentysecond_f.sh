#!/usr/bin/env bash
# Twenty-second session, sixth GPU call: the forward's B/C tiles in the inputs' bf16 (scan.BC_INPUT_DTYPE) against
# fp32, after call 5 found dstate 128's forward L1-bound (91 % of L1/TEX throughput). Offline (sm_90): B/C loads
# halved (LDG.128 64 -> 32 at dstate 128), +1 instruction a value for the widening (1376 -> 1720 there, 1128 -> 1304
# at dstate 16).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 500 python3 benchmarks/ab_scan_flag.py --flag BC_INPUT_DTYPE --rounds 5 m1-n128-8x2K m1train-n128-1x1K \
  m1-2.8b-8x2K m1-2.8b-1x32K m1-130m-1x32K > "$OUT/call6-ab-bc16.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call6-ab-bc16.txt" | tail -20
