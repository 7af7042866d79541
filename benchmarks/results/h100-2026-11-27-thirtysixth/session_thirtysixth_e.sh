#!/usr/bin/env bash
# Thirty-sixth session, call 5 (H100): why the 1x8K training call takes ~2 ms when its kernels take 0.92 (call 4):
# host time of the training calls at 1x2K, 1x8K and 1x32K (real, and with every launch stubbed), a cProfile of them,
# and which kernels take Triton's own launch.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 150 python3 benchmarks/launch_paths.py 2>&1 | grep -v Warn | tee "$OUT/call5-launch-paths.txt"
timeout 300 python3 benchmarks/host_overhead.py -w train-2.7b-1x2K -w train-2.7b-1x8K -w train-2.7b-1x32K \
  --calls 50 --profile 20 > "$OUT/call5-host.txt" 2>&1
grep -E "^train|workload" "$OUT/call5-host.txt"
