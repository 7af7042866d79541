#!/usr/bin/env bash
# Fortieth session, call 1: Mamba-1's packed backward as a dense batch's (scan.ROWS_BWD: the rows of `varlen_rows`,
# short sequences sharing a row up to ROW_GROUP tokens), against the packed row as one batch-1 sequence (ROWS_BWD
# False, the session's start) and against rows without sharing (ROW_GROUP 0), one process each
# (benchmarks/packed_vs_dense.py, flashssm alone); then the selective scan's GPU tests.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # name, then --set arguments
  local name=$1; shift
  timeout 150 python3 benchmarks/packed_vs_dense.py --ssd none --scan 8x2048 --scan 64x256 --scan 1x16384 \
    --rounds 5 "$@" > "$OUT/call1-scan-$name.txt" 2>&1
  echo "== $name"; grep -v -i warn "$OUT/call1-scan-$name.txt" | grep -v "^set\|NVIDIA\|lengths"
}
run rows
run start --set flashssm.ops.selective_scan.scan.ROWS_BWD=False
run group0 --set flashssm.ops.selective_scan.scan.ROW_GROUP=0
timeout 240 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  tests/ops/test_selective_scan_reference.py > "$OUT/call1-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call1-tests.txt" | head -30
