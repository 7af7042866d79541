#!/usr/bin/env bash
# Sixty-ninth session, call 4 (one H200, ~260 s): call 3's pieces lost at 32 x 2K (+11 %) and in the training forward
# (+3.4 %) while the plain 8 x 4K forward gained what the schedule predicted (-3.3 % against the waves by TMA). The
# question: is it B and C's L2 reuse (in chain order only about 8 chains start together, all of other batch rows)?
# PIECES "batch" lays the chains batch row first, so that those 8 share B and C. Tests of both orders, then the A/Bs.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider --tb=short -n 8 \
  tests/ops/test_ssd_forward.py -k "pieces" > "$OUT/tests-pieces.txt" 2>&1)
echo "tests rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/tests-pieces.txt" | tail -15
PYTHONPATH=. timeout 170 python3 benchmarks/ab_forward_flag.py flashssm.ops.ssd.forward_gluon.PIECES --value False \
  --value True --value '"batch"' --workload 2.7b-32x2K --workload 2.7b-8x4K --workload 2.7b-8x4K-layer \
  --workload 2.7b-8x4K-fp16 --rounds 5 --kernels > "$OUT/ab-pieces-forward.txt" 2>&1
grep -v Warn "$OUT/ab-pieces-forward.txt" | grep -v "_warn_once\|Activity\|cuLaunch\|cudaDevice"
PYTHONPATH=. timeout 120 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.forward_gluon.PIECES --value False \
  --value '"batch"' --value True --workload 8x4K --rounds 5 --kernel _ssd_fwd_gluon_kernel \
  > "$OUT/ab-pieces-train.txt" 2>&1
grep -v "Warn\|_warn_once" "$OUT/ab-pieces-train.txt" | tail -12
