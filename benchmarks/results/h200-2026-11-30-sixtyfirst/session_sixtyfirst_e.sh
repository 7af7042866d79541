#!/usr/bin/env bash
# Sixty-first session, call 5 (about 450 s): fp16's reduction of H across the warps through the loop's own barrier
# (each warp's rows' maxima to shared memory before it, read whole after: two barriers fewer a sub-chunk), timed
# against ff3eb28's kernel (forward_gluon_ff3.py, `ab_gluon_forward.py --before`, alternating, medians of 5), then the
# fp16 and swept-states Gluon tests on this code (the refactors since call 4 and this change) and a short fuzz.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
R=benchmarks/results/h200-2026-11-30-sixtyfirst
PYTHONPATH=$PWD timeout 130 python3 benchmarks/ab_gluon_forward.py --dtype fp16 --before $R/forward_gluon_ff3.py \
  --workload 2.7b-8x4K --workload 2.7b-1x128K --workload 2.7b-1x32K > "$OUT/ab-hmax.txt" 2>&1
echo "== ab rc $?"; grep -v -i warn "$OUT/ab-hmax.txt" | cut -c1-400
PYTHONPATH=$PWD timeout 280 python3 -m tests.fuzz.fuzz --shapes model --ops ssd_scan --seed 6105 --budget 220 \
  --verbose > "$OUT/fuzz-ssd-6105.txt" 2>&1 &
timeout 280 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/ops/test_ssd_forward.py \
  -k "sweep_states or (gluon and fp16)" > "$OUT/tests.txt" 2>&1
echo "== tests rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests.txt" | tail -8 | cut -c1-400
wait
echo "== fuzz"; grep "cases (" "$OUT/fuzz-ssd-6105.txt" | cut -c1-300; grep "^FAIL" "$OUT/fuzz-ssd-6105.txt" | cut -c1-700
grep -c "float16'" "$OUT/fuzz-ssd-6105.txt"
