#!/usr/bin/env bash
# Ready for the next session (about 500 s): which kernels wait on instruction fetch at all. The fifty-sixth session
# found the packed selective-scan backward in rows 10 % slower from its code's layout alone (no_instruction stalls
# 0.03 -> 0.44 a issued instruction, the same instructions executed); the dense backwards fetch well (0.02-0.03).
# This surveys every kernel of one call of the bench's main workloads (`benchmarks/profile_fetch.sh`: duration,
# instructions, registers, grid, stall reasons). A kernel with no_instruction above ~0.1 is one whose layout (a copy of
# a loop for an edge case, an unrolled body) is worth an A/B.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 560 bash benchmarks/profile_fetch.sh "$OUT/a" ssd-forward:1x128K ssd-forward:8x4K ssd-train:8x4K \
  ssd-train:1x32K scan-forward:m1train-2.8b-8x2K scan-train:m1train-2.8b-8x2K scan-train:m1train-2.8b-1x32K \
  scan-train:m1train-2.8b-packed-64x256 > "$OUT/a/survey.txt" 2>&1
echo "survey rc $?"; cut -c1-200 "$OUT/a/survey.txt"
# (a call brings back at most eight files: the raw CSVs and logs go back as one archive)
(cd "$OUT/a" && tar czf raw.tgz *.csv *.log && rm -f *.csv *.log)
ls -la "$OUT/a"
