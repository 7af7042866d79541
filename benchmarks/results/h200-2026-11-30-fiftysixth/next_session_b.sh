#!/usr/bin/env bash
# Ready for the next session (about 450 s): PEEL_EDGE_TILES_FWD (6088ce1, off, untimed), the forward's masked edge
# tiles outside the dense tiles' loop for rows of one sequence. The 64 x ~256 packed inference forward's +6.5 % since
# 22dffcb sits in its dense tile (same instructions, B/C loads waiting longer: long scoreboard 0.83 -> 1.18), which
# shares its loop with the masked tile. Offline (3.6) the peeled dense loop has 3 spilled loads a tile, so the
# prediction is a coin toss: within +-3 % either way; a gain would point at the loop's sharing, a loss at the spills.
# Then the GPU run of its test (the same bits as one loop) and the packed NaN forms; and the SSD backward's fp16
# tests: since the fifty-sixth session fp16 inputs keep the tiles' states and their gradients in fp32 (they lost
# digits as fp16 subnormals where dt is small), a combination that compiles offline for sm_90 but has not run there.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/ab_scan_flag.py --flag PEEL_EDGE_TILES_FWD --rounds 5 m1train-2.8b-packed-64x256 \
  m1train-2.8b-packed-8x2K > "$OUT/b/ab-peel.txt" 2>&1
echo "ab peel rc $?"; tail -14 "$OUT/b/ab-peel.txt" | cut -c1-300
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_selective_scan.py -k "peeled or packed_nan" > "$OUT/b/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/b/tests.txt" | tail -5
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_ssd_backward.py -k "fp16 or float16 or tiles_states" > "$OUT/b/tests-fp16.txt" 2>&1
echo "pytest fp16 rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/b/tests-fp16.txt" | tail -5
