#!/usr/bin/env bash
# Seventy-ninth session, call 6: the forward's gate with its exponent as one multiply (z * -log2 e, where -z * log2 e
# compiled to a negation and a multiply; offline 8 instructions fewer a tile at one lane, 9 at two; `gate-fmul.diff`
# applied to a456231) against a456231's scan.py, saved as scan_before_gate_fmul.py for the run (ab_scan_code.py: y the
# same bits?), and the GPU's forward tests (FAST, the GPU's form, only runs there).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
R=benchmarks/results/h200-2026-12-02-seventy-ninth
timeout 120 python3 benchmarks/ab_scan_code.py --old $R/scan_before_gate_fmul.py --rounds 3 m1-2.8b-8x2K m1-2.8b-1x32K \
  > "$OUT/ab-gate.txt" 2>&1
timeout 110 python3 -m pytest -q -p no:cacheprovider -o addopts= -n 8 tests/ops/test_selective_scan.py \
  -k "forward_layouts or output_shared or gpu_bf16_against or gpu_row" > "$OUT/tests-scan.txt" 2>&1
echo "tests rc $?" >> "$OUT/tests-scan.txt"
tail -16 "$OUT"/ab-gate.txt; tail -3 "$OUT"/tests-scan.txt
