#!/usr/bin/env bash
# Fifty-sixth session, call 3 (about 540 s). Call 2: the packed rows backward without the hand-over code stalled on
# instruction fetch (no_instruction 0.03 -> 0.44 warps a issued instruction, the rest alike): its 74 KB chunk loop's
# placement, not its size, decided it. (1) Do the dense backwards (m1train-2.8b-8x2K: no segments; 1x32K: segments)
# stall on instruction fetch too? (2) The selective scan's packed, rows, segment and NaN GPU tests on this session's
# code (the new SEGMENTS_WHERE_CHAINED test among them).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for w in m1train-2.8b-8x2K m1train-2.8b-1x32K; do
  timeout 150 bash benchmarks/profile_scan_stalls.sh $w current backward "$OUT/c/ncu-bwd-$w.txt" \
    > "$OUT/c/stalls-bwd-$w.txt" 2>&1
  echo "ncu $w rc $?"; cut -c1-110 "$OUT/c/stalls-bwd-$w.txt" | grep -E "Duration|no_instruction|long_score|short_score|wait |selected|Warp Cycles|Eligible Warps|local_ld"
done
timeout 230 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_selective_scan.py -k "packed or rows or varlen or nan or clean or segments or chained" \
  > "$OUT/c/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/c/tests.txt" | tail -6
