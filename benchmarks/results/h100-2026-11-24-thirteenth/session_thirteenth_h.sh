#!/usr/bin/env bash
# Thirteenth session, eighth GPU call: the host path of a training step at 1x2K (launches stubbed, cProfile).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/host_train_profile.py --steps 300 --top 40 > "$OUT/host-train-profile.txt" 2>&1
head -60 "$OUT/host-train-profile.txt"
timeout 100 python3 benchmarks/host_custom_op.py 2>&1 | tail -8 | tee "$OUT/host-custom-op.txt"
