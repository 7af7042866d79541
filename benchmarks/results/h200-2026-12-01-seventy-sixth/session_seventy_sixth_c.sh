#!/usr/bin/env bash
# Seventy-sixth session, call 3: (1) a probe: the Gluon sweep's masked decay matrix without its dt multiply and the
# cumsums' log2 e scaling (forward_gluon.M_PROBE = 1: the instructions a column term cs log2 e - log2 dt from the
# preparation launch would save, 968 -> 922 in the loop offline; y wrong), the kernel's time against the kernel's;
# (2) the sanitizer's new case, the Gluon kernel's packed form publishing late (560 chains), under the three tools.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=.
timeout 240 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.M_PROBE --value 0 --value 1 \
  --workload 2.7b-8x4K --workload 2.7b-32x2K --workload 2.7b-1x128K --rounds 7 --kernels > "$OUT/ab-mprobe.txt" 2>&1
CASES="ssd_gluon_packed_late" OUT="$OUT" PARALLEL=1 PLAIN=0 FUZZ_CASES=0 SANITIZE_TIMEOUT=200 timeout 330 \
  bash benchmarks/sanitize.sh > "$OUT/sanitize-log.txt" 2>&1
grep -v Warn "$OUT/ab-mprobe.txt" | grep -v warn_once
cat "$OUT/sanitize-summary.txt"
grep -E "^case_|launched:" "$OUT/sanitize-memcheck.txt"
