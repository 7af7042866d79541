#!/usr/bin/env bash
# Nsight Compute on one launch of the selective-scan forward alone (the inference forward: no stored states), through
# the current scan.py and through an earlier one, for a workload's picked configuration (packed workloads as the public
# path passes them, `ab_scan_code.scan_calls`): where the time of a forward whose SASS barely changed went.
#   bash benchmarks/profile_scan_ab.sh WORKLOAD OLD_SCAN_PY OUTDIR
# Writes OUTDIR/ncu-{old,new}.txt and prints the lines that differ most usefully side by side.
set -uo pipefail
w=${1:?workload}
old=${2:?old scan.py}
dir=${3:?out dir}
mkdir -p "$dir"
metrics=smsp__inst_executed.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum
metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
for v in old new; do
  cat > /tmp/one_scan_$v.py <<PY
import torch
from benchmarks.ab_scan_code import module, scan_calls
from flashssm.bench.workloads import WORKLOADS
mod = module(None if "$v" == "new" else "$old")
calls, _ = scan_calls(WORKLOADS["$w"].make_inputs("cuda"), mod)
calls["forward"]()  # compile outside the profiled launch
torch.cuda.synchronize()
calls["forward"]()
torch.cuda.synchronize()
PY
  ncu --clock-control none --kernel-name regex:_scan_fwd_kernel --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
      --metrics "$metrics" \
      python3 /tmp/one_scan_$v.py > "$dir/ncu-$v.txt" 2>&1
done
pat="Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Eligible Warps"
pat="$pat|Warp Cycles Per Issued|inst_executed.sum|local_ld|local_st|dram__bytes|lts__t_bytes|Memory Throughput"
pat="$pat|Waves Per SM|Grid Size"
paste <(grep -E "$pat" "$dir/ncu-old.txt" | sed 's/  */ /g' | cut -c1-70) \
      <(grep -E "$pat" "$dir/ncu-new.txt" | sed 's/  */ /g' | awk '{print $NF, $(NF-1)}')
