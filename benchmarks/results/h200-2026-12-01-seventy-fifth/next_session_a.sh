#!/usr/bin/env bash
# For the next session (prepared by the seventy-fifth): the kernels and forms the seventy-fifth session's sanitizer
# runs did not reach: the gated norm's wide backward (a group of 5120, as the 2.7B Mamba-2 model's norm with one
# group), and the Gluon kernel's packed form (IS_VARLEN, which only calls without gradients take), under the three
# tools. (Still not reached by any case: _dD_kernel, float64 inputs' D gradient.)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OMP_NUM_THREADS=4
CASES="rmsnorm ssd_gluon_packed_inference" OUT="$OUT" PARALLEL=1 PLAIN=0 FUZZ_CASES=0 SANITIZE_TIMEOUT=200 bash benchmarks/sanitize.sh
grep -E "^case_|launched:" "$OUT/sanitize-memcheck.txt"
