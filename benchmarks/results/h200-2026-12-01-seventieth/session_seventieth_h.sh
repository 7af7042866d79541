#!/usr/bin/env bash
# Seventieth session, call 8 (one H200, ~60 s): the 1 x 2K training call's replays step by step on the host (call 6:
# the forward's replay 101 us for 6 steps, the backward's 177 us).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 100 python3 benchmarks/replay_steps.py -w train-2.7b-1x2K -w 2.7b-1x2K > "$OUT/replay-steps.txt" 2>&1
grep -v "Warning\|warn_once" "$OUT/replay-steps.txt"
