#!/usr/bin/env bash
# Seventeenth session, second GPU call: the small training calls by kernel, with the backward on shorter chunks and
# the tiles forced (benchmarks/probe_small_train.py), and the 1x2K bench against mamba_ssm (wheels in .whl).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w 2.7b-1x2K -i flashssm -i mamba_ssm 2>&1 | grep -A3 "^train\|^2.7b" | grep -v "^peak"
cp "$OUT/bench.txt" "$OUT/call2-bench.txt"; rm -f "$OUT/bench.png" "$OUT/bench.txt" "$OUT/bench.json"
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
timeout 400 python3 benchmarks/probe_small_train.py 2>&1 | tee "$OUT/call2-probe-small.txt"
