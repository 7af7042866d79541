#!/usr/bin/env bash
# Seventy-fifth session, call 2: the cases call 1's tools did not reach in their 330 s (the selective scan's,
# the decoding steps, conv1d, the norm, 8 fuzz cases), the halves case (its stand-in took early_halves' old
# arguments: a TypeError in call 1), and two Gluon cases again with the replay check in units of the gradients'
# dtype. The three tools at once, no plain run, four CPU threads a process (the float64 references).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OMP_NUM_THREADS=4
CASES="ssd_halves ssd_gluon_late_train ssd_gluon_batch1 scan_long scan_varlen scan_mixer_layout scan_packed_short
scan_batch1_segments scan_dstate128 ssd_step scan_step conv1d conv1d_update rmsnorm" \
  OUT="$OUT" PARALLEL=1 PLAIN=0 FUZZ_CASES=8 SANITIZE_TIMEOUT=540 bash benchmarks/sanitize.sh
grep -A40 "^kernels launched" "$OUT/sanitize-memcheck.txt" || true
