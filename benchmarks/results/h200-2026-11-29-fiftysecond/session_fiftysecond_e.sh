#!/usr/bin/env bash
# Fifty-second session, call 5 (about 170 s, the session's last device time): what call 4 did not reach before its
# limits: the conv1d's and the norm's incoming layouts, and the fuzzer with a longer limit (its budget is checked
# between cases; call 4's first cases compiled past 80 s).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 60 python3 benchmarks/check_incoming_layouts.py --op causal_conv1d --op rmsnorm_gated > "$OUT/e/layouts.txt" 2>&1
echo "layouts rc $?"; cat "$OUT/e/layouts.txt" | tail -10
timeout 100 python3 -m tests.fuzz.fuzz --seed 55 --budget 40 --ops ssd_scan,selective_scan,causal_conv1d,rmsnorm_gated \
  > "$OUT/e/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -4 "$OUT/e/fuzz.txt" | cut -c1-600
