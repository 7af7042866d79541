#!/usr/bin/env bash
# Thirty-third session, call 5: where the 1x2K forward's host time goes (bench 0.139 / 0.152 ms against 0.054 ms of
# GPU time from a CUDA graph): host_overhead.py's enqueue rate, GPU rate, do_bench and the package's own Python with
# every launch stubbed, then cProfile of 300 calls; the same for the 1x2K training call.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/host_overhead.py -w 2.7b-1x2K -w train-2.7b-1x2K --profile 300 2>&1 | grep -v Warn \
  > "$OUT/call5-host.txt"
head -4 "$OUT/call5-host.txt"
