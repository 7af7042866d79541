#!/usr/bin/env bash
# Sixtieth session, call 1 (about 540 s): what the fifty-ninth session owed on the GPU (the sweeps' shared-memory fix
# at fp32 dstate 256 x headdim 128: `-k row_blocks`, and fuzz case 1288345749 replayed), the model-shape fuzz with
# longer budgets (two ssd_scan seeds, one selective_scan), and the decay80 dA figures with a longer limit (the
# fifty-eighth session's `decay80_log.py`, which stopped at 150 s after 5 cases last time).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/gpu.txt"
F="python3 -m tests.fuzz.fuzz --shapes model --verbose"
PYTHONPATH=$PWD timeout 520 $F --ops ssd_scan --seed 6001 --budget 450 > "$OUT/fuzz-ssd-6001.txt" 2>&1 &
PYTHONPATH=$PWD timeout 520 $F --ops ssd_scan --seed 6002 --budget 450 > "$OUT/fuzz-ssd-6002.txt" 2>&1 &
PYTHONPATH=$PWD timeout 520 $F --ops selective_scan --seed 6003 --budget 450 > "$OUT/fuzz-scan-6003.txt" 2>&1 &
R=benchmarks/results/h200-2026-11-30-fiftyeighth
( mkdir -p /tmp/t58 && cp -r tests /tmp/t58/ && patch -s -d /tmp/t58 -p1 < $R/decay80-log.diff
  PYTHONPATH=/tmp/t58:$PWD timeout 480 python3 -u $R/decay80_log.py 11 80 cuda > "$OUT/gpu-decay80-da.txt" 2>&1 ) &
timeout 300 python3 -m pytest -o addopts="-ra" -p no:cacheprovider -q tests/ops/test_ssd_backward.py \
  -k "row_blocks or fp32_large_state" > "$OUT/tests-owed.txt" 2>&1
echo "== owed tests rc $?"; grep -E "passed|failed|FAILED|Error" "$OUT/tests-owed.txt" | tail -8 | cut -c1-300
PYTHONPATH=$PWD timeout 150 python3 -m benchmarks.replay_fuzz_case --op ssd_scan --case 1288345749 --shapes model \
  > "$OUT/replay-1288345749.txt" 2>&1
echo "== replay rc $?"; grep -v -i warn "$OUT/replay-1288345749.txt" | tail -25 | cut -c1-200
wait
for f in "$OUT"/fuzz-*.txt; do
  echo "== $f"; grep -c "^ok" "$f"; grep "^FAIL\|cases (" "$f" | cut -c1-700; tail -2 "$f" | cut -c1-300
done
echo "== decay80"; grep -v -i warn "$OUT/gpu-decay80-da.txt" | wc -l
grep -v -i warn "$OUT/gpu-decay80-da.txt" | sort -k 13 -g | tail -8 | cut -c1-200
