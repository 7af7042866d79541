#!/usr/bin/env bash
# Sixty-third session, call 4 (about 440 s): call 3's GPU tests stopped at their limits (41 % and 35 % run, nothing
# failed): the same selections in four pytest processes side by side (the tests wait on their compiles, on the CPU).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
F=tests/ops/test_ssd_forward.py
B=tests/ops/test_ssd_backward.py
PYTHONPATH=$PWD timeout 420 $P $F -k "gluon" > "$OUT/tests-fwd-gluon.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $P $F -k "(public_path or nan or steep or digits) and not gluon" > "$OUT/tests-fwd-rest.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $P $B -k "tiles or da_head" > "$OUT/tests-bwd-tiles.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $P $B -k "(deterministic or fp16 or float16 or steep or every_option or bf16_error) and not tiles" \
  > "$OUT/tests-bwd-rest.txt" 2>&1 &
wait
for f in "$OUT"/tests-*.txt; do
  echo "== $f"; grep -E "passed|failed|FAILED|Error|%\]" "$f" | tail -4 | cut -c1-300
done
