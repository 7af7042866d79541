#!/usr/bin/env bash
# Seventy-sixth session, call 2: the seventy-fifth session's next_session_a.sh (the forms its sanitizer runs did not
# reach: the gated norm's wide backward, a group of 5120; the Gluon kernel's packed form, IS_VARLEN, which only
# calls without gradients take) under memcheck, racecheck and synccheck at once.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
OUT="$OUT" timeout 540 bash benchmarks/results/h200-2026-12-01-seventy-fifth/next_session_a.sh
cat "$OUT/sanitize-summary.txt"
for t in memcheck racecheck synccheck; do echo "== $t"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|failed|Traceback" "$OUT/sanitize-$t.txt" | head; done
