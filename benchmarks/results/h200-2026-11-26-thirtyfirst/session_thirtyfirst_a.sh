#!/usr/bin/env bash
# Thirty-first session, call 1: the Gluon forward's 16-bit move of y (no gate; D per head as a scalar).
# GPU tests of the Gluon kernel, the A/B against the fp32 move (--move32: the same kernel with D as a stride-0
# (heads, headdim) view) and the Triton kernel, then Nsight Compute on 1x128K's early form (sections, and
# the warp-stall sampling per SASS instruction).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> "$OUT/env.txt"
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m gpu tests/ops/test_ssd_forward.py -k gluon \
  > "$OUT/call1-tests-gluon.txt" 2>&1
tail -3 "$OUT/call1-tests-gluon.txt"
timeout 200 python3 benchmarks/ab_gluon_forward.py --move32 --workload 2.7b-8x4K --workload 2.7b-32x2K \
  --workload 2.7b-1x128K --workload 2.7b-1x32K --workload 2.7b-1x8K 2>&1 | grep -v Warn | tee "$OUT/call1-ab.txt"
timeout 150 bash benchmarks/profile_ssd_forward.sh 2.7b-1x128K "$OUT/call1-ncu-1x128K.txt" > /dev/null 2>&1
grep -E "Duration|Throughput|Occupancy|Hit Rate|Registers|Shared Memory Config|Block Limit|Issue|Eligible|Active Warps" \
  "$OUT/call1-ncu-1x128K.txt" | head -40
timeout 200 bash benchmarks/profile_ssd_forward.sh 2.7b-1x128K "$OUT/ncu" source > /dev/null 2>&1
python3 benchmarks/stall_summary.py "$OUT/ncu/src-2.7b-1x128K.csv" --top 30 > "$OUT/call1-stalls-1x128K.txt" 2>&1
head -50 "$OUT/call1-stalls-1x128K.txt"
gzip -f "$OUT/ncu/src-2.7b-1x128K.csv"; rm -f "$OUT"/ncu/*.ncu-rep
