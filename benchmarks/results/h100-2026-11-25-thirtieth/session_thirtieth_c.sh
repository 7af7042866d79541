#!/usr/bin/env bash
# Thirtieth session, call 3: the early Gluon forward's fault on headdim 128 / dstate 64 (call 2): how often, and what
# compute-sanitizer's racecheck and synccheck say about it.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-thirtieth
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for i in 1 2 3 4; do
  for s in "2 1000 16 128 64 2 128 all" "2 777 6 128 64 3 128 none" "2 1000 16 64 64 2 128 all" "2 1000 16 128 128 2 128 all" "1 4096 16 64 128 1 256 all"; do
    timeout 60 python3 $R/repro_early.py $s 2>&1 | grep -E "^\[|Error" | head -2
  done
done > "$OUT/call3-repeat.txt"
cat "$OUT/call3-repeat.txt"
timeout 200 $SAN --tool racecheck --racecheck-report hazard python3 $R/repro_early.py 2 1000 16 128 64 2 128 all \
  > "$OUT/call3-racecheck.txt" 2>&1
grep -m 20 -E "ERROR|Hazard|Race|Write|Read|hazard|y " "$OUT/call3-racecheck.txt"; tail -3 "$OUT/call3-racecheck.txt"
timeout 150 $SAN --tool synccheck python3 $R/repro_early.py 2 1000 16 128 64 2 128 all > "$OUT/call3-synccheck.txt" 2>&1
tail -5 "$OUT/call3-synccheck.txt"
