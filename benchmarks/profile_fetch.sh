#!/usr/bin/env bash
# Every kernel of one call (`profile_call_one.py KIND WORKLOAD`), by Nsight Compute with a few metrics only: its
# duration, instructions executed and the stall reasons per issued instruction that say where its warps wait, above
# all no_instruction (instruction fetch: the packed selective-scan backward lost 10 % to it from its code's layout
# alone, fifty-sixth session). A survey of which kernels, if any, a layout change could move.
#   bash benchmarks/profile_fetch.sh OUTDIR KIND:WORKLOAD ...     (e.g. ssd-train:8x4K scan-train:m1train-2.8b-8x2K)
# Writes OUTDIR/KIND-WORKLOAD.csv (ncu's raw CSV) and prints a table a kernel (fetch_table.py).
set -uo pipefail
out=${1:?out dir}
shift
mkdir -p "$out"
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread,launch__grid_size
stalls="no_instruction|long_scoreboard|short_scoreboard|wait|not_selected|selected|barrier|mio_throttle"
stalls="$stalls|math_pipe_throttle|branch_resolving"
metrics="$metrics,regex:smsp__average_warps_issue_stalled_($stalls)_per_issue_active\.ratio"
here=$(dirname "$0")
for job in "$@"; do
  kind=${job%%:*}
  w=${job#*:}
  ncu --clock-control none --profile-from-start off --metrics "$metrics" --csv --print-units base \
      python3 "$here/profile_call_one.py" "$kind" "$w" > "$out/$kind-$w.csv" 2> "$out/$kind-$w.log"
  echo "== $kind $w"
  python3 "$here/fetch_table.py" "$out/$kind-$w.csv"
done
