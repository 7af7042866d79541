#!/usr/bin/env bash
# Twenty-eighth session, call 3: where the one-lane Mamba-1 forward waits (Nsight Compute's warp stall sampling), batch
# 1 of the 2.8B shape in segments (1x32K): call 1 found it at 60-66 % of its MUFU bound and slower with exps moved to
# the FMA pipe; for the next session.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for w in m1-2.8b-1x32K; do
  timeout 400 bash benchmarks/profile_scan_backward.sh $w "$OUT/ncu" forward
  echo "profile $w: exit $?"
  python3 benchmarks/stall_summary.py "$OUT/ncu/src-$w.csv.gz" --top 12 --context 2 > "$OUT/call3-stalls-fwd-$w.txt" 2>&1
  head -40 "$OUT/call3-stalls-fwd-$w.txt"
  cp "$OUT/ncu/src-$w.log" "$OUT/call3-ncu-fwd-$w.log"
done
rm -rf "$OUT/ncu"
