#!/usr/bin/env bash
# Sixty-first session, call 1 (about 540 s): the Gluon forward's fp16 form. Its GPU tests first (against float64 and
# the Triton kernel's fp16 form, the two ends of fp16's range), then its time against the Triton kernel's fp16 form and
# the bf16 Gluon kernel (ab_gluon_forward.py, alternating, medians of 5), the ssd_scan fuzz at model shapes (fp16 cases
# now take the Gluon kernel) beside the bf16 Gluon tests.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/gpu.txt"
T="python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/ops/test_ssd_forward.py"
timeout 200 $T -k "fp16" > "$OUT/tests-fp16.txt" 2>&1
echo "== fp16 tests rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-fp16.txt" | tail -12 | cut -c1-400
W="--workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x32K --workload 2.7b-1x128K --workload 2.7b-1x8K"
PYTHONPATH=$PWD timeout 150 python3 benchmarks/ab_gluon_forward.py --dtype fp16 $W > "$OUT/ab-fp16.txt" 2>&1
echo "== ab fp16 rc $?"; grep -v -i warn "$OUT/ab-fp16.txt" | cut -c1-300
PYTHONPATH=$PWD timeout 80 python3 benchmarks/ab_gluon_forward.py --rounds 3 --workload 2.7b-8x4K \
  --workload 2.7b-1x128K > "$OUT/ab-bf16.txt" 2>&1
echo "== ab bf16 rc $?"; grep -v -i warn "$OUT/ab-bf16.txt" | cut -c1-300
PYTHONPATH=$PWD timeout 100 python3 -m tests.fuzz.fuzz --shapes model --ops ssd_scan --seed 6101 --budget 90 \
  > "$OUT/fuzz-ssd-6101.txt" 2>&1 &
timeout 100 $T -k "gluon and not fp16 and (public or packed_public or sweep_states or run_time_span)" \
  > "$OUT/tests-gluon-bf16.txt" 2>&1
echo "== bf16 gluon tests rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-gluon-bf16.txt" | tail -6 | cut -c1-300
wait
echo "== fuzz"; grep -c "^ok" "$OUT/fuzz-ssd-6101.txt"; grep "^FAIL\|cases (" "$OUT/fuzz-ssd-6101.txt" | cut -c1-700
tail -2 "$OUT/fuzz-ssd-6101.txt" | cut -c1-300
