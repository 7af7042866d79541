#!/usr/bin/env bash
# Sixty-first session, call 2 (about 540 s): every fp16 GPU test of the SSD forward and backward files and of
# test_prepared (fp16 calls of Gluon's shapes now take its fp16 form, the training forward too where it stores no
# tiles' states, e.g. with z), beside the ssd_scan fuzz at model shapes (its fp16 cases take it too).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
PYTHONPATH=$PWD timeout 520 python3 -m tests.fuzz.fuzz --shapes model --ops ssd_scan --seed 6102 --budget 420 \
  --verbose > "$OUT/fuzz-ssd-6102.txt" 2>&1 &
K="(float16 or fp16 or half) and not bfloat16"
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
timeout 150 $P tests/ops/test_ssd_forward.py -k "$K" > "$OUT/tests-fwd-fp16.txt" 2>&1
echo "== forward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-fwd-fp16.txt" | tail -8 | cut -c1-400
timeout 120 $P tests/test_prepared.py -k "fp16 or half" > "$OUT/tests-prepared-fp16.txt" 2>&1
echo "== prepared rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-prepared-fp16.txt" | tail -8 | cut -c1-400
timeout 240 $P tests/ops/test_ssd_backward.py -k "$K" > "$OUT/tests-bwd-fp16.txt" 2>&1
echo "== backward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-bwd-fp16.txt" | tail -8 | cut -c1-400
wait
echo "== fuzz"; grep -c "^ok" "$OUT/fuzz-ssd-6102.txt"; grep "^FAIL\|cases (" "$OUT/fuzz-ssd-6102.txt" | cut -c1-700
grep -c "float16" "$OUT/fuzz-ssd-6102.txt"; tail -2 "$OUT/fuzz-ssd-6102.txt" | cut -c1-300
