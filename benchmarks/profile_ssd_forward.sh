#!/usr/bin/env bash
# Nsight Compute on one launch of the fused SSD forward (2.7B shape), clocks left alone.
#   bash benchmarks/profile_ssd_forward.sh WORKLOAD OUTFILE            (sections: speed of light,
#        occupancy, warp states, compute and memory workload)
#   bash benchmarks/profile_ssd_forward.sh WORKLOAD OUTDIR source     (where the warps wait,
#        instruction by instruction: warp stall sampling exported per SASS instruction to
#        OUTDIR/src-WORKLOAD.csv, with the report in OUTDIR/src-WORKLOAD.ncu-rep;
#        benchmarks/stall_summary.py condenses the CSV)
#   PRELUDE="python statements" sets module switches before the launches (e.g. a form to profile)
set -uo pipefail
w=${1:-2.7b-8x4K}
out=${2:-ncu.txt}
mode=${3:-sections}
cat > /tmp/one_launch.py <<PY
import torch, flashssm
from flashssm.bench.workloads import WORKLOADS
${PRELUDE:-}
inp = WORKLOADS["$w"].make_inputs("cuda")
flashssm.ssd_scan(**inp, chunk_size=256)  # compile outside the profiled launch
torch.cuda.synchronize()
flashssm.ssd_scan(**inp, chunk_size=256)
torch.cuda.synchronize()
PY
one=(--clock-control none --kernel-name regex:_ssd_fwd --launch-skip 1 --launch-count 1)
if [ "$mode" = source ]; then
  mkdir -p "$out"
  ncu "${one[@]}" --section SourceCounters --section WarpStateStats --section Occupancy --import-source no \
      -f -o "$out/src-$w" python3 /tmp/one_launch.py > "$out/src-$w.log" 2>&1
  ncu -i "$out/src-$w.ncu-rep" --page source --csv --print-source sass > "$out/src-$w.csv" 2>> "$out/src-$w.log"
  ncu -i "$out/src-$w.ncu-rep" --page details --section WarpStateStats --section Occupancy >> "$out/src-$w.log" 2>&1
  tail -40 "$out/src-$w.log"
else
  ncu "${one[@]}" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      python3 /tmp/one_launch.py > "$out" 2>&1
  tail -120 "$out"
fi
