#!/usr/bin/env bash
# Forty-first session, call 5: call 4 ran out of time (its tests reached ~85 % with no failure, the fuzzer printed
# nothing before its limit): the selective scan's GPU test file alone, then the fuzzer on selective_scan with a
# shorter budget.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p "$OUT/call5"
timeout 330 python3 -m pytest -q -o addopts="-ra" -n 10 -p no:cacheprovider tests/ops/test_selective_scan.py \
  > "$OUT/call5/tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call5/tests.txt" | head -30
timeout 120 python3 -m tests.fuzz.fuzz --seed 41 --budget 20 --ops selective_scan --device cuda \
  > "$OUT/call5/fuzz.txt" 2>&1
grep -v -i warn "$OUT/call5/fuzz.txt" | tail -8
