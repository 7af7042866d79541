#!/usr/bin/env bash
# Nsight Compute on one launch of the selective_scan backward kernel (a bench workload's shape, its picked
# configuration), clocks left alone: where the warps wait, instruction by instruction (warp stall sampling exported
# per SASS instruction; benchmarks/stall_summary.py condenses the CSV), with the occupancy, pipe and warp-state
# sections in the log. With a third argument `forward`, the forward kernel instead (the inference forward: no
# stored states).
#   bash benchmarks/profile_scan_backward.sh WORKLOAD OUTDIR [forward]
set -uo pipefail
w=${1:-m1train-2.8b-8x2K}
out=${2:-ncu-scan-bwd}
which=${3:-backward}
kernel=_scan_bwd_kernel
[ "$which" = forward ] && kernel=_scan_fwd_kernel
mkdir -p "$out"
cat > /tmp/one_scan_bwd.py <<PY
import torch
from flashssm.bench.workloads import SCAN_TRAIN_INPUTS, WORKLOADS
from flashssm.ops.selective_scan import scan
inp = WORKLOADS["$w"].make_inputs("cuda")
t = [inp[k] for k in SCAN_TRAIN_INPUTS]
cfg = scan.backward_config(*inp["u"].shape[:2], inp["A"].shape[1], 1, inp["u"].shape[2],
                           torch.cuda.get_device_properties(0).multi_processor_count, 2)
print(cfg)
_, _, ckpt = scan.scan_forward(*t, True, ckpt_tile=cfg.chunk)
for _ in range(2):  # the first compiles; the second is profiled
    if "$which" == "forward":
        scan.scan_forward(*t, True)
    else:
        scan.scan_backward(inp["dy"], None, *t, True, ckpt=ckpt, ckpt_tile=cfg.chunk)
    torch.cuda.synchronize()
PY
ncu --clock-control none --kernel-name regex:$kernel --launch-skip 1 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section Occupancy --section SpeedOfLight \
    --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats --import-source no \
    -f -o "$out/src-$w" python3 /tmp/one_scan_bwd.py > "$out/src-$w.log" 2>&1
ncu -i "$out/src-$w.ncu-rep" --page source --csv --print-source sass > "$out/src-$w.csv" 2>> "$out/src-$w.log"
ncu -i "$out/src-$w.ncu-rep" --page details >> "$out/src-$w.log" 2>&1
gzip -f "$out/src-$w.csv"
rm -f "$out/src-$w.ncu-rep"
grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Eligible Warps|Warp Cycles Per Issued|Executed Ipc|Compute \(SM\)|Memory Throughput|L1/TEX Hit|L2 Hit|Block Limit" "$out/src-$w.log" | head -30
