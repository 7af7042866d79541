#!/usr/bin/env bash
# Sixty-third session, call 6 (about 30 s): the Gluon kernel's switch in its bit-stable form (gluon-ex2-switch.diff:
# ex2.approx.ftz of x log2(e)), A/B'd once more in one process, with the forward alone beside.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
PYTHONPATH=$PWD timeout 150 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.FAST_EXP --value False \
  --value True --workload 8x4K --workload 1x32K --forward --rounds 5 > "$OUT/ab-gluon-exp-final.txt" 2>&1
