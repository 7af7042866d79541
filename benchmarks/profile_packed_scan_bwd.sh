#!/usr/bin/env bash
# Nsight Compute on one launch of the selective_scan backward kernel for the same tokens as a dense batch and as a
# packed batch's rows (benchmarks/ab_packed_scan_bwd.py's forms, 2.8B shape), clocks left alone: the warp stall
# sampling per SASS instruction (condensed by benchmarks/stall_summary.py), with the occupancy, pipe, memory and
# warp-state sections in the log, so that the two kernels can be read side by side.
#   bash benchmarks/profile_packed_scan_bwd.sh OUTDIR [SHAPE] [FORM ...]     (SHAPE 8x2048; FORMs dense rows)
set -uo pipefail
out=${1:-ncu-packed-bwd}
shape=${2:-8x2048}
shift 2 2>/dev/null || shift $#
forms=${*:-dense rows}
mkdir -p "$out"
for form in $forms; do
  cat > /tmp/one_packed_bwd.py <<PY
import torch
from benchmarks.ab_packed_scan_bwd import packed_calls
b, l = (int(v) for v in "$shape".split("x"))
calls, _ = packed_calls(b, l, False, ("$form",))
for _ in range(2):  # the first compiles; the second is profiled
    calls["$form"]()
    torch.cuda.synchronize()
PY
  tag=$form-$shape
  ncu --clock-control none --kernel-name regex:_scan_bwd_kernel --launch-skip 1 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section Occupancy --section SpeedOfLight \
      --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section LaunchStats --import-source no \
      -f -o "$out/$tag" python3 /tmp/one_packed_bwd.py > "$out/$tag.log" 2>&1
  ncu -i "$out/$tag.ncu-rep" --page source --csv --print-source sass > "$out/$tag.csv" 2>> "$out/$tag.log"
  ncu -i "$out/$tag.ncu-rep" --page details >> "$out/$tag.log" 2>&1
  python3 benchmarks/stall_summary.py "$out/$tag.csv" --top 25 > "$out/$tag-stalls.txt" 2>&1
  gzip -f "$out/$tag.csv"
  rm -f "$out/$tag.ncu-rep"
  echo "== $tag"
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Instructions |No Eligible|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|DRAM Throughput|Grid Size|Block Size|Dynamic Shared|Static Shared" \
    "$out/$tag.log" | head -24
  head -3 "$out/$tag-stalls.txt"
done
