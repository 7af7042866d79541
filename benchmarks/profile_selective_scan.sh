#!/usr/bin/env bash
# Nsight Compute on one launch of the selective_scan forward kernel (Mamba-1 2.8B shape), clocks left alone.
#   bash benchmarks/profile_selective_scan.sh WORKLOAD OUTFILE [LANES]
# LANES picks the forward configuration's lanes per channel (one warp, tiles of 8); default: the picked one.
set -uo pipefail
w=${1:-m1-2.8b-8x2K}
out=${2:-ncu-scan.txt}
lanes=${3:-0}
cat > /tmp/one_scan.py <<PY
import torch
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.selective_scan import scan
inp = WORKLOADS["$w"].make_inputs("cuda")
args = [inp.get(k) for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")]
cfg = scan.ForwardConfig(32 // $lanes, $lanes, 8, 1) if $lanes else None
scan.scan_forward(*args, True, config=cfg)  # compile outside the profiled launch
torch.cuda.synchronize()
scan.scan_forward(*args, True, config=cfg)
torch.cuda.synchronize()
PY
ncu --clock-control none --kernel-name regex:_scan_fwd_kernel --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section SchedulerStats --section InstructionStats \
    --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
    python3 /tmp/one_scan.py > "$out" 2>&1
grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Issued Ipc|No Eligible|Active Warps|Eligible Warps|Stall|pipe_xu|pipe_fma|inst_executed.sum|Warp Cycles Per Issued|Block Limit|Executed Ipc|SM Busy|Memory Throughput|DRAM Throughput|Compute \(SM\)" "$out" | head -60
