#!/usr/bin/env bash
# Fortieth session, call 2: the packed backward's rows reading each sequence's boundaries from the row (scan.WINDOW_BWD,
# the default now where no row is shared) against the per-token sequence index (WINDOW_BWD False, call 1's rows), one
# process each (benchmarks/packed_vs_dense.py, flashssm alone); then the selective scan's GPU tests.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
run() {  # name, time limit, then packed_vs_dense arguments
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 benchmarks/packed_vs_dense.py --ssd none --rounds 5 "$@" > "$OUT/call2-scan-$name.txt" 2>&1
  echo "== $name"; grep -v -i warn "$OUT/call2-scan-$name.txt" | grep -v "^set\|NVIDIA\|lengths"
}
run window 200 --scan 8x2048 --scan 64x256 --scan 1x16384
run varlen-form 130 --scan 8x2048 --scan 1x16384 --set flashssm.ops.selective_scan.scan.WINDOW_BWD=False
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  > "$OUT/call2-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call2-tests.txt" | head -30
