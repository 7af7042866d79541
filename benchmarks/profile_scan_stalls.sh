#!/usr/bin/env bash
# Nsight Compute on one launch of the selective scan's forward (inference: no stored states) or backward kernel for a
# variant of the scan module (`profile_scan_one.py`: `current`, an earlier scan.py's path, or NAME=VALUE, one of its
# switches), on a workload's picked configuration: duration, occupancy, instructions, local memory, DRAM and L2
# bytes, and the stall reasons per issued instruction (no_instruction: the instruction cache).
#   bash benchmarks/profile_scan_stalls.sh WORKLOAD VARIANT {forward|backward} OUT_TXT [source]
# Writes the report's text to OUT_TXT and prints its useful lines; with `source`, a second profile's stall samples
# per SASS instruction too (OUT_TXT's stem + .csv.gz, condensed by stall_summary.py into stem + -stalls.txt).
set -uo pipefail
w=${1:?workload}
variant=${2:?variant}
which=${3:?forward or backward}
out=${4:?output file}
source=${5:-}
kernel=_scan_fwd_kernel
[ "$which" = backward ] && kernel=_scan_bwd_kernel
metrics=smsp__inst_executed.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum
metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
stalls="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
profile() {  # metrics, output file
  ncu --clock-control none --kernel-name "regex:$kernel" --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters \
      --import-source no --metrics "$1" \
      python3 "$(dirname "$0")/profile_scan_one.py" "$w" "$variant" "$which" > "$2" 2>&1
}
profile "$metrics,$stalls" "$out"
if grep -q "==ERROR==" "$out"; then  # (a metric this ncu does not know: again without the stalls')
  mv "$out" "$out.failed"
  profile "$metrics" "$out"
fi
if [ "$source" = source ]; then
  stem=${out%.txt}
  ncu --clock-control none --kernel-name "regex:$kernel" --launch-skip 1 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --import-source no -f -o "$stem" \
      python3 "$(dirname "$0")/profile_scan_one.py" "$w" "$variant" "$which" > "$stem-source.log" 2>&1
  ncu -i "$stem.ncu-rep" --page source --csv --print-source sass > "$stem.csv" 2>> "$stem-source.log"
  python3 "$(dirname "$0")/stall_summary.py" "$stem.csv" --top 30 > "$stem-stalls.txt" 2>&1
  gzip -f "$stem.csv"
  rm -f "$stem.ncu-rep"
fi
pat="Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Eligible Warps"
pat="$pat|Warp Cycles Per Issued|inst_executed.sum|local_ld|local_st|dram__bytes|lts__t_bytes|Memory Throughput"
pat="$pat|Waves Per SM|Grid Size|issue_stalled"
grep -E "$pat" "$out" | sed 's/  */ /g; s/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
