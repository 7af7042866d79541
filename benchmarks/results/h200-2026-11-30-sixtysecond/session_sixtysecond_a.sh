#!/usr/bin/env bash
# Sixty-second session, call 1 (about 560 s): fp16 training with the tiles' states and state gradients scaled fp16
# (a unit a (chunk, head) tile) instead of fp32. Its GPU tests (the Gluon kernel's scaled store, every fp16 test of
# the SSD backward file, the owed fp16 Gluon tests), then the training call against the tree before (old62/ =
# 74661ce's package; time_ssd_calls.py in script mode, alternating processes, with the peak memory), bf16 once each
# (unchanged code path: the same figures expected), and fp16 gradients against float64 at the 2.7B shape, both trees.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
PYTHONPATH=$PWD timeout 170 $P tests/ops/test_ssd_forward.py \
  -k "scaled_states or sweep_states or (gluon and fp16) or negative_dt or keeps_its_digits or public_path_and_nan" \
  > "$OUT/tests-fwd.txt" 2>&1
echo "== forward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-fwd.txt" | tail -8 | cut -c1-400
PYTHONPATH=$PWD timeout 150 $P tests/ops/test_ssd_backward.py \
  -k "(float16 or fp16 or half or tiles_states or in_place or carry or smaller_chunks) and not bfloat16" \
  > "$OUT/tests-bwd.txt" 2>&1
echo "== backward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-bwd.txt" | tail -8 | cut -c1-400
for i in 1 2; do
  for t in old new; do
    if [ $t = old ]; then PP=$PWD/old62:$PWD; else PP=$PWD; fi
    PYTHONPATH=$PP timeout 70 python3 benchmarks/time_ssd_calls.py --train 8x4K 1x32K --dtype fp16 --peak \
      > "$OUT/time-$i-$t.txt" 2>&1
    echo "== $i $t rc $?"; grep -v -i warn "$OUT/time-$i-$t.txt" | cut -c1-150
  done
done
for t in old new; do
  if [ $t = old ]; then PP=$PWD/old62:$PWD; else PP=$PWD; fi
  PYTHONPATH=$PP timeout 50 python3 benchmarks/time_ssd_calls.py 8x4K --train 8x4K --peak > "$OUT/time-bf16-$t.txt" 2>&1
  echo "== bf16 $t rc $?"; grep -v -i warn "$OUT/time-bf16-$t.txt" | cut -c1-150
  PYTHONPATH=$PP timeout 60 python3 benchmarks/fp16_train_accuracy.py > "$OUT/accuracy-$t.txt" 2>&1
  echo "== accuracy $t rc $?"; grep -v -i warn "$OUT/accuracy-$t.txt" | cut -c1-400
done
