#!/usr/bin/env bash
# Twenty-first session, sixth GPU call: call 5's grouped lanes (states 4 a lane, consecutive) made the stored states
# whole-sector vectors but moved every lane's B/C rows 4 apart (backward +27-42 %, forwards at 2+ lanes up to 3x):
# dropped. Kept from it: where the forward runs one lane a channel (batch 1 at dstate 16), a thread's slots already
# are consecutive states, and only the store changes (16-byte vectors). A/B against 006389d, then the GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentyfirst  # scan_006389d.py: git show 006389d:flashssm/ops/selective_scan/scan.py (not kept)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 280 python3 benchmarks/ab_scan_code.py --old $R/scan_006389d.py --rounds 5 m1train-130m-1x8K \
  m1train-2.8b-1x32K m1train-2.8b-8x2K > "$OUT/call6-ab-vector-store.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call6-ab-vector-store.txt" | tail -18
timeout 295 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call6-tests-scan.txt" 2>&1
echo "tests: exit $?"; tail -2 "$OUT/call6-tests-scan.txt"
