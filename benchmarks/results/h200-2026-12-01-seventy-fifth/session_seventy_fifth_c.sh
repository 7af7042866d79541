#!/usr/bin/env bash
# Seventy-fifth session, call 3: the driver's last cases (dstate 128's scan, the decoding steps, conv1d, the gated
# norm) and 8 fuzz cases under the three tools at once (calls 1-2 ran the others; their packed selective-scan
# references took most of those calls).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OMP_NUM_THREADS=4
CASES="scan_dstate128 ssd_step scan_step conv1d conv1d_update rmsnorm" \
  OUT="$OUT" PARALLEL=1 PLAIN=0 FUZZ_CASES=8 SANITIZE_TIMEOUT=330 bash benchmarks/sanitize.sh
grep -A40 "^kernels launched" "$OUT/sanitize-memcheck.txt" || true
