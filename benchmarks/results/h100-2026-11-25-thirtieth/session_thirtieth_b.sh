#!/usr/bin/env bash
# Thirtieth session, call 2: call 1's test run died of a misaligned address (and its log was cut: the pipe's head
# closed early). The early-publish Gluon tests alone, then the real-shape calls one by one, the first failing one
# under compute-sanitizer.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-thirtieth
for s in "1 4096 80 64 128 1 256" "2 1000 16 128 64 2 128" "1 5000 80 64 128 1 256" "2 777 6 128 64 3 128" \
         "2 1 4 64 128 1 256" "1 321 2 64 128 1 64"; do
  if ! timeout 60 python3 $R/repro_early.py $s >> "$OUT/call2-repro.txt" 2>&1; then
    echo "FAILED: $s" >> "$OUT/call2-repro.txt"
    SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
    [ -n "$SAN" ] && timeout 150 $SAN --tool memcheck --show-backtrace no python3 $R/repro_early.py $s \
      > "$OUT/call2-sanitizer.txt" 2>&1
    break
  fi
done
cat "$OUT/call2-repro.txt"; grep -m 12 -E "Invalid|misaligned|at 0x|by thread|Address" "$OUT/call2-sanitizer.txt" 2>/dev/null
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_forward.py \
  -k "gluon" > "$OUT/call2-tests-gluon.txt" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/call2-tests-gluon.txt" | tail -25
