#!/usr/bin/env bash
# Twenty-third session, third GPU call: dstate 128's forward after the 16-bit B/C tiles (twenty-second session), for
# the next session (its first run had the sweep's argument malformed; the rerun, call 4, times the sweep alone): its launch shape re-swept (lanes 4/8/16, warps 1/2/4; picked: 8 lanes, 2 warps, chosen while the
# kernel was L1-bound) and where it waits now (Nsight Compute's stall sampling).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 benchmarks/tune_selective_scan.py --forward \
  --fwd-configs "m1-n128-8x2K:8,8,2;m1-n128-8x2K:8,8,1;m1-n128-8x2K:8,8,4;m1-n128-8x2K:16,8,1;m1-n128-8x2K:16,8,2;m1-n128-8x2K:16,8,4;m1-n128-8x2K:4,8,2;m1-n128-8x2K:4,8,4" > "$OUT/call3-tune-n128-fwd.txt" 2>&1
echo "tune: exit $?"; grep -v -i warn "$OUT/call3-tune-n128-fwd.txt" | tail -14
w=m1-n128-8x2K
timeout 200 bash benchmarks/profile_scan_backward.sh $w "$OUT/ncu" forward
echo "profile $w: exit $?"
python3 benchmarks/stall_summary.py "$OUT/ncu/src-$w.csv.gz" --top 12 --context 2 > "$OUT/call3-stalls-fwd-$w.txt" 2>&1
head -30 "$OUT/call3-stalls-fwd-$w.txt"
cp "$OUT/ncu/src-$w.log" "$OUT/call3-ncu-fwd-$w.log"
grep -E "Issue Slots Busy|Achieved Occupancy|L1/TEX Hit|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Memory Throughput|Registers Per" "$OUT/call3-ncu-fwd-$w.log" | head -12
rm -rf "$OUT/ncu"
