#!/usr/bin/env bash
# Nsight Compute on one launch of the fused SSD forward (2.7B shape), clocks left alone.
#   bash benchmarks/profile_ssd_forward.sh WORKLOAD OUTFILE
set -uo pipefail
w=${1:-2.7b-8x4K}
out=${2:-ncu.txt}
cat > /tmp/one_launch.py <<PY
import torch, flashssm
from flashssm.bench.workloads import WORKLOADS
inp = WORKLOADS["$w"].make_inputs("cuda")
flashssm.ssd_scan(**inp, chunk_size=256)  # compile outside the profiled launch
torch.cuda.synchronize()
flashssm.ssd_scan(**inp, chunk_size=256)
torch.cuda.synchronize()
PY
ncu --clock-control none --kernel-name regex:_ssd_fwd --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    python3 /tmp/one_launch.py > "$out" 2>&1
tail -120 "$out"
