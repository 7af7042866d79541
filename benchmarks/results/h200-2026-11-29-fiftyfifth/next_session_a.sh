#!/usr/bin/env bash
# Ready for the next session (about 500 s). (1) Where the 64 x ~256 packed inference forward's +6.5 % since the packed
# NaN fix went (fifty-fifth session: not the spills, removed in 8c87795 with no change in time; the loop's SASS is the
# same size as 22dffcb's, 3.6 offline): Nsight Compute on both forwards alone, side by side (duration, issue stalls,
# instructions executed, local memory, DRAM and L2 bytes). (2) The selective scan's packed and segment GPU tests on
# the final code (call 5 ran the packed NaN, varlen and clean-chunks ones: 23 passed).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
git show 22dffcb:flashssm/ops/selective_scan/scan.py > /tmp/scan_22dffcb.py
timeout 240 bash benchmarks/profile_scan_ab.sh m1train-2.8b-packed-64x256 /tmp/scan_22dffcb.py "$OUT/a/ncu" \
  > "$OUT/a/ncu-side-by-side.txt" 2>&1
echo "ncu rc $?"; cat "$OUT/a/ncu-side-by-side.txt" | cut -c1-160 | head -40
timeout 230 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_selective_scan.py -k "packed or rows or varlen or nan or clean or segments" > "$OUT/a/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/a/tests.txt" | tail -6
