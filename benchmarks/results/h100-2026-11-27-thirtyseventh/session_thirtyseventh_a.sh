#!/usr/bin/env bash
# Thirty-seventh session, call 1 (H100): is the small training call bound by the host or the GPU? Kernel times
# (profiler) against the call's time, host time with few calls in flight (no queue back-pressure), real and with every
# launch stubbed, and a trace of host against GPU activity.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> "$OUT/env.txt"
timeout 120 python3 benchmarks/train_kernel_times.py --workload 1x2K --workload 1x8K > "$OUT/call1-kernels.txt" 2>&1
for n in 5 10 50; do
  timeout 150 python3 benchmarks/host_overhead.py -w train-2.7b-1x2K -w train-2.7b-1x8K --calls $n \
    > "$OUT/call1-host-$n.txt" 2>&1
done
timeout 150 python3 benchmarks/host_trace.py --workload 1x2K --workload 1x8K --trace "$OUT" > "$OUT/call1-trace.txt" 2>&1
timeout 150 python3 benchmarks/host_trace.py --workload 1x2K --options > "$OUT/call1-trace-opts.txt" 2>&1
gzip "$OUT"/trace-*.json
cat "$OUT/call1-kernels.txt"; grep -h "^train\|workload" "$OUT"/call1-host-*.txt; head -60 "$OUT/call1-trace.txt"
