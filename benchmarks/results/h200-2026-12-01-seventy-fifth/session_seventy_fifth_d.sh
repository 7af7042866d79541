#!/usr/bin/env bash
# Seventy-fifth session, call 4: the SSD cases again under memcheck, now that the driver prints each
# case's kernels and forms as it goes (calls 1-2 were cut at their limits before the end-of-run report): which
# forms of the Gluon kernel (late, early, TMA loads and stores, fp16, packed) ran under the sanitizer.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OMP_NUM_THREADS=8
CASES="ssd_big_tiles ssd_handover ssd_tiles_spans ssd_halves ssd_gluon_late_train ssd_gluon_late_z ssd_gluon_fp16
ssd_gluon_batch1 ssd_gluon_packed" OUT="$OUT" PARALLEL=1 FUZZ_CASES=0 PLAIN=0 SANITIZE_TIMEOUT=280 \
  bash benchmarks/sanitize.sh memcheck
grep -E "^case_|launched:" "$OUT/sanitize-memcheck.txt"
