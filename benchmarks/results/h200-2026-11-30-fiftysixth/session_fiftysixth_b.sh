#!/usr/bin/env bash
# Fifty-sixth session, call 2 (about 520 s). Call 1 found the packed backward in rows 9-12 % slower without the
# hand-over code (SEGMENTS_WHERE_CHAINED on: 8 x 2K 4.382 -> 4.778 ms, 64 x 256 4.696 -> 5.275), where no row chains
# and the two kernels' chunk loops have the same instruction mix offline (4608 against 4593, LDL 10 against 12).
# (1) Nsight Compute on that backward at 64 x 256, the switch off and on: stall reasons per issued instruction (no
# instruction = the instruction cache), instructions executed, local memory. (2) The fifty-fifth session's owed
# profile: the 64 x 256 inference forward, 22dffcb's scan.py (carried, `git show 22dffcb:...`) against now (+6.5 %).
# (profile_scan_pair.sh was then one script; it now runs profile_scan_stalls.sh twice, with the same figures.)
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
D=benchmarks/results/h200-2026-11-30-fiftysixth
timeout 330 bash benchmarks/profile_scan_pair.sh m1train-2.8b-packed-64x256 SEGMENTS_WHERE_CHAINED=False \
  SEGMENTS_WHERE_CHAINED=True "$OUT/b/ncu-bwd" backward > "$OUT/b/ncu-bwd-side-by-side.txt" 2>&1
echo "ncu bwd rc $?"; cut -c1-150 "$OUT/b/ncu-bwd-side-by-side.txt" | head -60
timeout 170 bash benchmarks/profile_scan_pair.sh m1train-2.8b-packed-64x256 $D/scan_base_22dffcb.py current \
  "$OUT/b/ncu-fwd" forward > "$OUT/b/ncu-fwd-side-by-side.txt" 2>&1
echo "ncu fwd rc $?"; cut -c1-150 "$OUT/b/ncu-fwd-side-by-side.txt" | head -60
ls "$OUT/b"/*/
