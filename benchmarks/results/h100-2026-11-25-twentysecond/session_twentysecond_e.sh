#!/usr/bin/env bash
# Twenty-second session, fifth GPU call: where the Mamba-1 forward waits (Nsight Compute's warp stall sampling), the
# two-lane 8x2K forward (offline: ~60 % of its issue and MUFU bounds) and dstate 128's 8x2K forward (30x the memory
# floor, ~2.7x its MUFU bound), for the next session.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for w in m1train-2.8b-8x2K m1-n128-8x2K; do
  timeout 240 bash benchmarks/profile_scan_backward.sh $w "$OUT/ncu" forward
  echo "profile $w: exit $?"
  python3 benchmarks/stall_summary.py "$OUT/ncu/src-$w.csv.gz" --top 12 --context 2 > "$OUT/call5-stalls-fwd-$w.txt" 2>&1
  head -40 "$OUT/call5-stalls-fwd-$w.txt"
  cp "$OUT/ncu/src-$w.log" "$OUT/call5-ncu-fwd-$w.log"
done
rm -rf "$OUT/ncu"
