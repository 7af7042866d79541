#!/usr/bin/env bash
# Fifty-ninth session, call 3: the parallel form's dx launch in row blocks of its fp32 state tiles (the OutOfResources
# of fuzz case 3025600353): the new test at the shape that raised and the parallel / deterministic tests of the
# backward file on the GPU, the case replayed; the dA probe of case 4057396612 (`probe_da_sign.py`); more model-shape
# fuzz with fresh seeds beside them.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
F="python3 -m tests.fuzz.fuzz --shapes model --verbose"
PYTHONPATH=$PWD timeout 420 $F --ops ssd_scan --seed 5921 --budget 360 > "$OUT/fuzz-ssd-5921.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $F --ops ssd_scan --seed 5922 --budget 360 > "$OUT/fuzz-ssd-5922.txt" 2>&1 &
PYTHONPATH=$PWD timeout 420 $F --ops selective_scan --seed 5923 --budget 360 > "$OUT/fuzz-scan-5923.txt" 2>&1 &
PYTHONPATH=$PWD timeout 150 python3 -m benchmarks.probe_da_sign > "$OUT/probe-da.txt" 2>&1
echo "== probe rc $?"; grep -v -i warn "$OUT/probe-da.txt" | cut -c1-200
PYTHONPATH=$PWD timeout 120 python3 -m benchmarks.replay_fuzz_case --op ssd_scan --case 3025600353 --shapes model \
  > "$OUT/replay-oor.txt" 2>&1
echo "== replay rc $?"; grep -v -i warn "$OUT/replay-oor.txt" | grep -v "^  d\|^  y\|^  final" | tail -5 | cut -c1-250
timeout 300 python3 -m pytest -o addopts="-ra" -p no:cacheprovider -q -x tests/ops/test_ssd_backward.py \
  -k "row_blocks or parallel or deterministic" > "$OUT/tests-bwd.txt" 2>&1
echo "== tests rc $?"; tail -4 "$OUT/tests-bwd.txt" | cut -c1-300
wait
for f in "$OUT"/fuzz-*.txt; do
  echo "== $f"; grep -c "^ok" "$f"; grep "^FAIL\|cases (" "$f" | cut -c1-600
done
