#!/usr/bin/env bash
# Twenty-ninth session, call 2: the Gluon sweep's variants (EARLY_CB: the next sub-chunk's C.B^T issued at the end
# of an iteration; PREFETCH: L2 prefetch two sub-chunks ahead; STORE_DIRECT: y stored from the products' layout),
# checked and A/B'd against the Triton kernel; then Nsight Compute on one launch of the default variant at 8x4K
# (sections, then per-instruction stall sampling for benchmarks/stall_summary.py).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device2.txt" 2>&1
timeout 300 python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --workload 2.7b-8x4K --workload 2.7b-32x2K 2>&1 \
  | grep -v -i warn | tee "$OUT/call2-gluon-variants.txt"
one=(--clock-control none --kernel-name regex:_gluon_late --launch-skip 1 --launch-count 1)
timeout 150 ncu "${one[@]}" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --profile 2.7b-8x4K > "$OUT/call2-ncu-gluon-8x4K.txt" 2>&1
grep -E "Duration|Throughput|Busy|Issue Slots|Achieved Occupancy|Registers|Shared Memory Config|Bandwidth|Hit Rate|Warp Cycles|Eligible" \
  "$OUT/call2-ncu-gluon-8x4K.txt" | head -40
timeout 150 ncu "${one[@]}" --section SourceCounters --section WarpStateStats --import-source no -f \
  -o "$OUT/src-gluon-8x4K" python3 benchmarks/results/h100-2026-11-25-twentyninth/gluon_ssd_forward_experiment.py --profile 2.7b-8x4K > "$OUT/src-gluon.log" 2>&1
ncu -i "$OUT/src-gluon-8x4K.ncu-rep" --page source --csv --print-source sass > "$OUT/src-gluon-8x4K.csv" 2>> "$OUT/src-gluon.log"
python3 benchmarks/stall_summary.py "$OUT/src-gluon-8x4K.csv" --top 25 --context 2 > "$OUT/call2-stalls-gluon-8x4K.txt" 2>&1
head -60 "$OUT/call2-stalls-gluon-8x4K.txt"
gzip -f "$OUT/src-gluon-8x4K.csv"; rm -f "$OUT/src-gluon-8x4K.ncu-rep"
