#!/usr/bin/env bash
# Ready for the next session: the Mamba-2 130M model's second training step took 212-227 ms with compile-ahead on
# against 81 ms off (calls 5 and 6, benchmarks/notes/first_call.md), unexplained. first_call.py now splits the second
# step into forward and backward and counts the full garbage collections in it; --collect runs one, untimed, after the
# first step. If the extra time goes with a collection: collect (or gc.freeze) where the background queue empties. The
# Mamba-1 model as a control. About 150 s.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 160 python3 benchmarks/first_call.py model:mamba2-130m:4x2048 --settings on,off --steps 5 2>&1 \
  | tee "$OUT/a/first_call.txt"
timeout 80 python3 benchmarks/first_call.py model:mamba2-130m:4x2048 --settings on --steps 5 --collect 2>&1 \
  | tail -n +2 | tee -a "$OUT/a/first_call.txt"
