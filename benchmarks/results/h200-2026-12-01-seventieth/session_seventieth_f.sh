#!/usr/bin/env bash
# Seventieth session, call 6 (one H200, ~60 s): a training call's host time by phase (call 5: at 1 x 2K the GPU idles
# 214 us of each 692 us call waiting on the host, 138 us of it between the forward's last kernel and the backward's
# first).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
export PYTHONPATH=.
timeout 120 python3 benchmarks/host_phases.py -w train-2.7b-1x2K -w train-2.7b-1x8K \
  > "$OUT/host-phases.txt" 2>&1
cat "$OUT/host-phases.txt" | grep -v "Warning\|warn_once"
