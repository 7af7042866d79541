#!/usr/bin/env bash
# Thirty-first session, call 6 (H100): the new shared-memory stages of dt and the cumsums under compute-sanitizer's
# racecheck and synccheck (early and late publish, y moved in 16 and in 32 bits), then the SSD backward test file
# (the training forward takes the Gluon kernel at batch 1).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-thirtieth
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in racecheck synccheck; do
  for s in "2 1000 16 64 128 2 128 none" "2 777 6 128 64 3 128 all" "8 300 80 64 128 1 128 none" "8 300 80 64 128 1 128 all"; do
    echo "== $tool $s" >> "$OUT/call6-sanitizer.txt"
    timeout 150 $SAN --tool $tool python3 $R/repro_early.py $s 2>&1 | grep -v Warn | tail -4 >> "$OUT/call6-sanitizer.txt"
  done
done
cat "$OUT/call6-sanitizer.txt"
timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  > "$OUT/call6-tests-bwd.txt" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/call6-tests-bwd.txt" | tail -20
