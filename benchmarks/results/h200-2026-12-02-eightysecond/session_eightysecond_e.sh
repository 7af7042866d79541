#!/usr/bin/env bash
# Eighty-second session, call 5: the whole test suite on the GPU (its last whole run was the seventy-eighth
# session's; this session changed `_runtime.cached_launch`, which every launch takes, and the SSD training dispatch):
# the two SSD files and the rest as two pytest runs side by side on one H200, 7 workers each. No peers' wheels: their
# comparisons skip.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
ARGS=(-q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 7 --dist worksteal)
timeout 560 python3 -m pytest "${ARGS[@]}" tests/ops/test_ssd_forward.py tests/ops/test_ssd_backward.py \
  > "$OUT/tests-ssd.txt" 2>&1 &
timeout 560 python3 -m pytest "${ARGS[@]}" tests --ignore tests/ops/test_ssd_forward.py \
  --ignore tests/ops/test_ssd_backward.py > "$OUT/tests-rest.txt" 2>&1 &
wait
for f in tests-ssd tests-rest; do
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/$f.txt" | tail -15
done
