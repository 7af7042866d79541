#!/usr/bin/env bash
# Forty-first session, call 1: Nsight Compute on the selective scan's backward for 8x2048 of the 2.8B shape as a
# dense batch and as a packed batch's rows (the 15 % between them the fortieth session left unexplained), then the
# Mamba-1 packed bench workloads added at the end of that session (never run on a GPU), with their dense twins.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call1"
timeout 330 bash benchmarks/profile_packed_scan_bwd.sh "$OUT/call1" 8x2048 dense rows
timeout 220 python3 -m flashssm bench -i flashssm -w m1-2.8b-8x2K -w m1-2.8b-packed-8x2K -w m1train-2.8b-8x2K \
  -w m1train-2.8b-packed-8x2K -w m1train-2.8b-packed-64x256 > "$OUT/call1/bench.txt" 2>&1
grep -v -i warn "$OUT/call1/bench.txt" | tail -40
