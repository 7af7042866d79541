#!/usr/bin/env bash
# Seventeenth session, first GPU call: where a 1x2K training call's host time goes (cProfile with the launches
# stubbed), host against GPU time per call, and the bench of the 1x2K cases against mamba_ssm in the same run.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
bash benchmarks/gpu_run.sh bench -- -w train-2.7b-1x2K -w 2.7b-1x2K -i flashssm -i mamba_ssm 2>&1 | grep -v "^peak" | tail -20
cp "$OUT/bench.txt" "$OUT/call1-bench.txt"; rm -f "$OUT/bench.png" "$OUT/bench.txt" "$OUT/bench.json"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 benchmarks/host_overhead.py -w train-2.7b-1x2K -w 2.7b-1x2K 2>&1 | tee "$OUT/call1-host.txt" | tail -12
timeout 200 python3 benchmarks/host_train_profile.py --workload 2.7b-1x2K --steps 300 --top 45 > "$OUT/call1-host-profile.txt" 2>&1
head -70 "$OUT/call1-host-profile.txt"
