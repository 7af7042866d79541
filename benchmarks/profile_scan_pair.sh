#!/usr/bin/env bash
# `profile_scan_stalls.sh` for two variants of the scan module (`current`, an earlier scan.py's path, or NAME=VALUE,
# one of its switches) on one workload's forward (inference) or backward kernel, side by side: where the time of two
# kernels that execute about the same instructions went.
#   bash benchmarks/profile_scan_pair.sh WORKLOAD VARIANT_A VARIANT_B OUTDIR [forward|backward] [source]
# Writes OUTDIR/ncu-{a,b}.txt (with `source`, the stall samples per instruction too: ncu-{a,b}-stalls.txt).
set -uo pipefail
w=${1:?workload}
va=${2:?variant a}
vb=${3:?variant b}
dir=${4:?out dir}
which=${5:-forward}
source=${6:-}
here=$(dirname "$0")
mkdir -p "$dir"
bash "$here/profile_scan_stalls.sh" "$w" "$va" "$which" "$dir/ncu-a.txt" $source | cut -c1-70 > "$dir/lines-a.txt"
bash "$here/profile_scan_stalls.sh" "$w" "$vb" "$which" "$dir/ncu-b.txt" $source | awk '{print $NF, $(NF-1)}' \
  > "$dir/lines-b.txt"
echo "a: $va    b: $vb    ($w, $which)"
paste "$dir/lines-a.txt" "$dir/lines-b.txt"
