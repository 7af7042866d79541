#!/usr/bin/env bash
# check_incoming_layouts.py's 130M-width 1 x 16384 selective-scan case (segments) with the time its backward's first
# compiles take (calls 2 of this and the last session gave it 90 s and it printed nothing).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 250 python3 benchmarks/check_incoming_layouts.py --op "selective_scan 1x16384" > "$OUT/e/layouts.txt" 2>&1
echo "layouts rc $?"; tail -6 "$OUT/e/layouts.txt"
