#!/usr/bin/env bash
# Sixty-second session, call 3 (about 300 s): the scaled fp16 states in the deterministic mode (its tiles recompute
# the states over the state gradients' buffer, units and all) and on packed sequences, at the 2.7B shape against
# float64, beside a longer ssd_scan fuzz at model shapes.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
timeout 280 python3 -m tests.fuzz.fuzz --shapes model --ops ssd_scan --seed 6202 --budget 250 \
  --verbose > "$OUT/fuzz-ssd-6202.txt" 2>&1 &
for flag in --deterministic --packed; do
  timeout 100 python3 benchmarks/fp16_train_accuracy.py $flag > "$OUT/accuracy$flag.txt" 2>&1
  echo "== accuracy $flag rc $?"; grep -v -i warn "$OUT/accuracy$flag.txt" | cut -c1-400
done
wait
echo "== fuzz"; grep "cases (" "$OUT/fuzz-ssd-6202.txt" | cut -c1-300; grep "^FAIL" "$OUT/fuzz-ssd-6202.txt" | cut -c1-700
grep -c "'torch.float16'" "$OUT/fuzz-ssd-6202.txt"
