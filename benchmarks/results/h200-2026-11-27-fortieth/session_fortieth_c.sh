#!/usr/bin/env bash
# Fortieth session, call 3: the packed backward alone (benchmarks/ab_packed_scan_bwd.py: batch-1 row, rows with the
# per-token index, rows with their boundaries, against the dense batch), at 8x2048 and 1x16384, chunk-aligned and
# ragged; then the selective scan's GPU tests (call 2's were cut off by their time limit).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 benchmarks/ab_packed_scan_bwd.py --scan 1x16384 --scan 8x2048 > "$OUT/call3-ab.txt" 2>&1
timeout 100 python3 benchmarks/ab_packed_scan_bwd.py --scan 8x2048 --scan 64x256 --ragged >> "$OUT/call3-ab.txt" 2>&1
grep -v -i warn "$OUT/call3-ab.txt"
timeout 320 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  --durations=8 > "$OUT/call3-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  |s call" "$OUT/call3-tests.txt" | head -30
