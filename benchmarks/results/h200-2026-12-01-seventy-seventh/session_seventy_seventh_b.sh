#!/usr/bin/env bash
# Seventy-seventh session, call 2: why the split sweep (forward_gluon.SPLIT) took the one-warp-group sweep's time:
# its resources as compiled on the GPU (benchmarks/split_probe.py), then Nsight Compute's stall sampling and occupancy
# of one 8 x 4K launch of each form.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 120 python3 benchmarks/split_probe.py > "$OUT/resources.txt" 2>&1
PRELUDE="from flashssm.ops.ssd import forward_gluon; forward_gluon.SPLIT = True" timeout 200 \
  bash benchmarks/profile_ssd_forward.sh 2.7b-8x4K "$OUT/split" source > /dev/null 2>&1
timeout 200 bash benchmarks/profile_ssd_forward.sh 2.7b-8x4K "$OUT/one" source > /dev/null 2>&1
for f in split one; do
  python3 benchmarks/stall_summary.py "$OUT/$f/src-2.7b-8x4K.csv" --top 25 --context 2 > "$OUT/stalls-$f.txt" 2>&1
  gzip -f "$OUT/$f/src-2.7b-8x4K.csv"; rm -f "$OUT/$f/src-2.7b-8x4K.ncu-rep"
done
cat "$OUT/resources.txt"; grep -i "occupancy\|Registers\|Block Limit\|Warp Cycles\|Eligible\|Issued" "$OUT"/*/src-*.log | head -40
