#!/usr/bin/env bash
# Prepared by the seventy-third session, not run. One H200, ~150 s. What the wider backward key (every saved tensor's
# signature, the saved-tensor hooks fix) costs the host-bound 1 x 2K training call: the tree before it (2e32d1b)
# against this one, in alternating processes, three rounds (estimated ~5 us a backward, 0.6 %). Needs the checkout's
# .git on the device (git archive); says so where it is missing.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/old && mkdir -p /tmp/old
if ! git archive 2e32d1b flashssm | tar -x -C /tmp/old; then
  echo "no git history here: the A/B needs the tree at 2e32d1b" | tee "$OUT/ab.txt"; exit 0
fi
for round in 1 2 3; do
  for tree in /tmp/old "$PWD"; do
    echo "== $tree round $round" >> "$OUT/ab.txt"
    PYTHONPATH=$tree:. timeout 60 python3 benchmarks/time_ssd_calls.py 1x2K --train 1x2K 8x4K >> "$OUT/ab.txt" 2>&1
  done
done
cat "$OUT/ab.txt"
