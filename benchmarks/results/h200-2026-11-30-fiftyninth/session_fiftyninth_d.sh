#!/usr/bin/env bash
# Fifty-ninth session, call 4: the second OutOfResources (fuzz case 1288345749: fp32, headdim 128, dstate 256, 8 groups)
# replayed with its traceback; the backward file's parallel / deterministic / row-block tests to the end (call 3's
# run stopped at its limit, 49 passed).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
PYTHONPATH=$PWD timeout 150 python3 -m benchmarks.replay_fuzz_case --op ssd_scan --case 1288345749 --shapes model \
  > "$OUT/replay-oor2.txt" 2>&1
echo "== replay rc $?"; grep -v -i warn "$OUT/replay-oor2.txt" | grep "File \"/work\|Error\|failures\|^  d\|^  y" | cut -c1-200
timeout 330 python3 -m pytest -o addopts="-ra" -p no:cacheprovider -q tests/ops/test_ssd_backward.py \
  -k "row_blocks or parallel or deterministic" > "$OUT/tests-bwd.txt" 2>&1
echo "== tests rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-bwd.txt" | tail -8 | cut -c1-300
