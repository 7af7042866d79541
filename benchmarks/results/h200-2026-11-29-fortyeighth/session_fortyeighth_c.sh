#!/usr/bin/env bash
# Compile-ahead, where the first call's time goes: forward and backward first calls apart, with 1, 4 or 8 background
# threads and off (fresh process and Triton cache each; `benchmarks/first_call.py`).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/first_call.py m1train-2.8b-8x2K --settings off,on1,on4 2>&1 | tee "$OUT/c/first_call.txt"
timeout 120 python3 benchmarks/first_call.py train-2.7b-8x4K --settings off,on1,on4,on8 2>&1 | tail -n +2 | tee -a "$OUT/c/first_call.txt"
timeout 280 python3 benchmarks/first_call.py m1train-2.8b-packed-8x2K --settings on4,off 2>&1 | tail -n +2 | tee -a "$OUT/c/first_call.txt"
