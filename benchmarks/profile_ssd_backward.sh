#!/usr/bin/env bash
# Nsight Compute on one launch of a kernel of the chain SSD backward (default the sweeps' _ssd_bwd_kernel), from a
# training call of a train workload (2.7B shape, bf16, no options: the bench's train inputs), clocks left alone.
#   bash benchmarks/profile_ssd_backward.sh WORKLOAD OUTDIR [KERNEL_REGEX]
# writes OUTDIR/sections-WORKLOAD-KERNEL.txt (speed of light, occupancy, launch, warp states, compute and memory
# workload) and OUTDIR/src-WORKLOAD-KERNEL.csv.gz (warp stall sampling per SASS instruction: benchmarks/stall_summary.py).
set -uo pipefail
w=${1:-train-2.7b-8x4K}
out=${2:-ncu-bwd}
kernel=${3:-_ssd_bwd_kernel}
tag=$w-${kernel//[^A-Za-z0-9_]/}
mkdir -p "$out"
export PYTHONPATH=$PWD
cat > /tmp/one_backward.py <<PY
import torch, flashssm
from flashssm.bench.workloads import WORKLOADS
inp = WORKLOADS["$w"].make_inputs("cuda")
dy = inp.pop("dy")
leaves = {k: (v.detach().requires_grad_() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in inp.items()}
for _ in range(2):  # the first call compiles outside the profiled launch
    y = flashssm.ssd_scan(**leaves, chunk_size=256)
    y.backward(dy)
    torch.cuda.synchronize()
PY
one=(--clock-control none --kernel-name regex:$kernel --launch-skip 1 --launch-count 1)
ncu "${one[@]}" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    python3 /tmp/one_backward.py > "$out/sections-$tag.txt" 2>&1
tail -100 "$out/sections-$tag.txt"
ncu "${one[@]}" --section SourceCounters --section WarpStateStats --import-source no \
    -f -o "$out/src-$tag" python3 /tmp/one_backward.py > "$out/src-$tag.log" 2>&1
ncu -i "$out/src-$tag.ncu-rep" --page source --csv --print-source sass > "$out/src-$tag.csv" 2>> "$out/src-$tag.log"
gzip -f "$out/src-$tag.csv"
rm -f "$out/src-$tag.ncu-rep"
python3 benchmarks/stall_summary.py "$out/src-$tag.csv.gz" --top 25 --context 2 > "$out/stalls-$tag.txt" 2>&1
head -60 "$out/stalls-$tag.txt"
