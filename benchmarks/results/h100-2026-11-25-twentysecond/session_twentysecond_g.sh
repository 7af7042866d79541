#!/usr/bin/env bash
# Twenty-second session, seventh GPU call: the backward's B/C tiles in the inputs' bf16 too (scan.BC_INPUT_DTYPE_BWD)
# against fp32, the forward's at its new default (bf16 tiles; call 6: dstate 128's forward -27 %).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 520 python3 benchmarks/ab_scan_flag.py --flag BC_INPUT_DTYPE_BWD --rounds 3 m1train-2.8b-8x2K \
  m1train-n128-1x1K m1train-130m-1x8K m1train-2.8b-1x32K > "$OUT/call7-ab-bc16-bwd.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call7-ab-bc16-bwd.txt" | tail -20
