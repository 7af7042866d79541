#!/usr/bin/env bash
# Sixty-first session, call 4 (about 500 s): fp16 training's forward on the Gluon kernel too (the tiles' fp32 states
# stored from its registers). Its tests (the swept states against the recompute, the fp16 Gluon tests, every fp16 test
# of the SSD backward file) beside the ssd_scan fuzz at model shapes, then the training call timed against the tree
# before (old61/ = c521ae8's package; time_ssd_calls.py in script mode, alternating processes).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
PYTHONPATH=$PWD timeout 260 python3 -m tests.fuzz.fuzz --shapes model --ops ssd_scan --seed 6104 --budget 200 \
  --verbose > "$OUT/fuzz-ssd-6104.txt" 2>&1 &
P="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q"
timeout 150 $P tests/ops/test_ssd_forward.py -k "sweep_states or (gluon and fp16)" > "$OUT/tests-fwd.txt" 2>&1
echo "== forward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-fwd.txt" | tail -8 | cut -c1-400
timeout 150 $P tests/ops/test_ssd_backward.py -k "(float16 or fp16 or half) and not bfloat16" > "$OUT/tests-bwd.txt" 2>&1
echo "== backward rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-bwd.txt" | tail -8 | cut -c1-400
wait
echo "== fuzz"; grep "cases (" "$OUT/fuzz-ssd-6104.txt" | cut -c1-300; grep "^FAIL" "$OUT/fuzz-ssd-6104.txt" | cut -c1-700
grep -c "float16'" "$OUT/fuzz-ssd-6104.txt"
for i in 1 2; do
  for t in old new; do
    if [ $t = old ]; then PP=$PWD/old61:$PWD; else PP=$PWD; fi
    PYTHONPATH=$PP timeout 90 python3 benchmarks/time_ssd_calls.py 8x4K --train 8x4K 1x32K --dtype fp16 \
      > "$OUT/time-$i-$t.txt" 2>&1
    echo "== $i $t rc $?"; grep -v -i warn "$OUT/time-$i-$t.txt" | cut -c1-130
  done
done
