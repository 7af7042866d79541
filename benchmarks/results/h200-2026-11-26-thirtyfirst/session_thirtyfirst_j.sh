#!/usr/bin/env bash
# Thirty-first session, call 10 (H100): the early form's own-state sweep in three stages (`_own_state3`, rows two
# sub-chunks ahead) with y's 16-bit move by hand. Gluon GPU tests, then the A/B against main's kernel
# (ab_tmp/fg_main.py: `git show 0542edd:flashssm/ops/ssd/forward_gluon.py`).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m gpu tests/ops/test_ssd_forward.py -k gluon \
  > "$OUT/call10-tests-gluon.txt" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/call10-tests-gluon.txt" | tail -8
timeout 200 python3 benchmarks/ab_gluon_forward.py --before ab_tmp/fg_main.py --workload 2.7b-1x128K \
  --workload 2.7b-1x32K --workload 2.7b-1x8K --workload 2.7b-8x4K --workload 2.7b-32x2K 2>&1 | grep -v Warn \
  | tee "$OUT/call10-ab.txt"
