#!/usr/bin/env bash
# Fifty-sixth session, call 4 (about 300 s). Call 2: the 64 x 256 packed inference forward, 22dffcb against now
# (+6.5 %), executes the same instructions (495 M against 491 M) and moves the same bytes, but waits more on global
# loads (long scoreboard 0.83 -> 1.18 warps a issued instruction). Where: the stall samples per SASS instruction of
# both kernels (`profile_scan_pair.sh ... source`). scan_base_22dffcb.py was carried, untracked, from
# `git show 22dffcb:flashssm/ops/selective_scan/scan.py` (not kept). The call brought back eight files of ten: the b
# side's report was profiled again (call4/ncu-fwd-b-rerun/).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
D=benchmarks/results/h200-2026-11-30-fiftysixth
timeout 420 bash benchmarks/profile_scan_pair.sh m1train-2.8b-packed-64x256 $D/scan_base_22dffcb.py current \
  "$OUT/d/ncu-fwd" forward source > "$OUT/d/side-by-side.txt" 2>&1
echo "ncu rc $?"; grep -E "Duration|long_score" "$OUT/d/side-by-side.txt"
for v in a b; do echo "== $v"; head -4 "$OUT/d/ncu-fwd/ncu-$v-stalls.txt" | cut -c1-400; done
ls -la "$OUT/d/ncu-fwd/"
