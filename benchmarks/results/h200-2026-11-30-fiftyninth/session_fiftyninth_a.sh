#!/usr/bin/env bash
# Fifty-ninth session, call 1 (about 420 s): the fuzzer at models' shapes (`--shapes model`, new: the fast paths the
# bench and models take, which the small shapes almost never reach: the Gluon forward, early and late, one wave of
# spans, the selective scan's segment plans), three processes at once (compiles are CPU-bound), and the fifty-eighth
# session's decay80 dA figures on the GPU (`next_session_a.sh` there) beside them.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/gpu.txt"
F="python3 -m tests.fuzz.fuzz --shapes model --verbose"
PYTHONPATH=$PWD timeout 330 $F --ops ssd_scan --seed 5901 --budget 270 > "$OUT/fuzz-ssd-5901.txt" 2>&1 &
PYTHONPATH=$PWD timeout 330 $F --ops ssd_scan --seed 5902 --budget 270 > "$OUT/fuzz-ssd-5902.txt" 2>&1 &
PYTHONPATH=$PWD timeout 330 $F --ops selective_scan --seed 5903 --budget 270 > "$OUT/fuzz-scan-5903.txt" 2>&1 &
OUT="$OUT/decay80" bash benchmarks/results/h200-2026-11-30-fiftyeighth/next_session_a.sh > "$OUT/decay80.txt" 2>&1 &
wait
for f in "$OUT"/fuzz-*.txt; do
  echo "== $f"; grep -c "^ok" "$f"; grep "^FAIL\|cases (" "$f" | cut -c1-700; tail -2 "$f" | cut -c1-300
done
echo "== decay80"; cat "$OUT/decay80.txt" | cut -c1-200
