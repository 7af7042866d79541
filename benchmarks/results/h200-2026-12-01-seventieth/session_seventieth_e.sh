#!/usr/bin/env bash
# Seventieth session, call 5 (one H200, ~90 s): a 1 x 2K training call's kernels and the GPU's idle gaps between them
# (call 4: host 692 us a call, back-to-back GPU time 741 us a call, against ~0.48 ms of kernels in the fifty-first
# session's profile), and 1 x 8K's beside it.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
for w in train-2.7b-1x2K train-2.7b-1x8K 2.7b-1x2K; do
  timeout 100 python3 benchmarks/train_gaps.py $w > "$OUT/gaps-$w.txt" 2>&1
  grep -v "Warning\|warn_once" "$OUT/gaps-$w.txt" | head -40
done
