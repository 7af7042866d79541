#!/usr/bin/env bash
# Fifty-seventh session, call 1 (about 560 s): the fifty-sixth session's owed GPU checks (its next_session_b.sh) and
# the cost of fp16 training's fp32 tiles states (ca7fc30): fp16 training timed in the tree before it (_old_fp16/, the
# package at 77e3e43, carried untracked) and in this one, alternating, with the sums of the gradients' magnitudes.
# Prediction: the recompute of the states (the state launch the bf16 path skips) costs fp16 training +10-20 % at
# 8 x 4K (bf16's stored states saved about that much in the thirty-fourth session); bf16 unchanged.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_ssd_backward.py -k "fp16 or float16 or tiles_states" > "$OUT/b/tests-fp16.txt" 2>&1
echo "pytest fp16 rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/b/tests-fp16.txt" | tail -5
for r in 1 2; do
  for tree in old new; do
    if [ $tree = old ]; then P=$PWD/_old_fp16:$PWD; else P=$PWD; fi
    PYTHONPATH=$P timeout 80 python3 benchmarks/time_ssd_calls.py --dtype fp16 --train 8x4K 1x32K --reps 3 \
      >> "$OUT/b/fp16-train-$tree.txt" 2>&1
    echo "fp16 $tree round $r rc $?"
  done
done
cat "$OUT/b"/fp16-train-*.txt | cut -c1-200
PYTHONPATH=$PWD timeout 40 python3 benchmarks/time_ssd_calls.py --train 8x4K --reps 3 > "$OUT/b/bf16-train.txt" 2>&1
cat "$OUT/b/bf16-train.txt" | cut -c1-200
timeout 170 python3 benchmarks/ab_scan_flag.py --flag PEEL_EDGE_TILES_FWD --rounds 5 m1train-2.8b-packed-64x256 \
  m1train-2.8b-packed-8x2K > "$OUT/b/ab-peel.txt" 2>&1
echo "ab peel rc $?"; tail -14 "$OUT/b/ab-peel.txt" | cut -c1-300
timeout 120 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_selective_scan.py -k "peeled or packed_nan" > "$OUT/b/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/b/tests.txt" | tail -5
