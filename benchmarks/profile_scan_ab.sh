#!/usr/bin/env bash
# Nsight Compute on one launch of the selective-scan forward alone (the inference forward: no stored states), through
# an earlier scan.py and through the current one (`profile_scan_pair.sh`, which takes switches and the backward too).
#   bash benchmarks/profile_scan_ab.sh WORKLOAD OLD_SCAN_PY OUTDIR
# Writes OUTDIR/ncu-{a,b}.txt (a: the old file) and prints the lines that differ most usefully side by side.
set -uo pipefail
exec bash "$(dirname "$0")/profile_scan_pair.sh" "${1:?workload}" "${2:?old scan.py}" current "${3:?out dir}" forward
