#!/usr/bin/env bash
# Forty-ninth session, call 2: a process that ends while compile-ahead's daemon thread is compiling (one training
# forward, then the script's end: return, sys.exit, an uncaught exception). Exit status, how long the exit took, stderr.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 400 python3 benchmarks/exit_while_compiling.py m1train-2.8b-packed-8x2K:return m1train-2.8b-packed-8x2K:return \
  train-2.7b-8x4K:return train-2.7b-8x4K:exit m1train-2.8b-8x2K:raise m1train-2.8b-packed-8x2K:exit 2>&1 \
  | tee "$OUT/b/exit.txt"
