#!/usr/bin/env bash
# Seventy-ninth session, call 3: the output work shared by a channel's lanes, second form: the tile's own values
# taken in the lanes' layout (a reshape and a permute, no data moved: offline no shuffle and no shared memory) instead
# of loaded again and recomputed (call 2's form: the backward +6 to +10 %). A/B alternating in one process, then the
# GPU tests of the selective scan with both on.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$OUT/gpu.txt"
timeout 170 python3 benchmarks/ab_scan_flag.py --flag SPLIT_OUT_FWD --rounds 5 m1-2.8b-8x2K m1-n128-8x2K \
  > "$OUT/ab-split-fwd.txt" 2>&1
timeout 200 python3 benchmarks/ab_scan_flag.py --flag SPLIT_OUT_BWD --rounds 5 m1train-2.8b-8x2K m1train-2.8b-1x32K \
  > "$OUT/ab-split-bwd.txt" 2>&1
timeout 230 python3 -m pytest -q -p no:cacheprovider -o addopts= -n 8 tests/ops/test_selective_scan.py \
  -k "output_shared or forward_layouts or backward_layouts or segments or packed or gpu_ or every_option or varlen" \
  > "$OUT/tests-scan.txt" 2>&1
echo "tests rc $?" >> "$OUT/tests-scan.txt"
tail -12 "$OUT"/ab-split-fwd.txt; tail -12 "$OUT"/ab-split-bwd.txt; grep -E "passed|failed|FAILED|Error" "$OUT"/tests-scan.txt | tail -8
