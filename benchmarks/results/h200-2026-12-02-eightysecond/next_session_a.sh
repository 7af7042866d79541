#!/usr/bin/env bash
# Prepared for the next session (not run). The eighty-second session's call 5 ran the whole suite on the GPU after
# `_runtime.cached_launch` gained the shared-memory stage fallback: the SSD files passed (913), the rest reported 1111
# of its ~1150 tests (1103 passed, none failed) before the call's 560 s limit. This runs the rest in two halves side
# by side, so that every test reports: the models and the prepared calls in one, everything else (but the SSD files)
# in the other. No peers' wheels: their comparisons skip.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
ARGS=(-q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 7 --dist worksteal)
timeout 560 python3 -m pytest "${ARGS[@]}" tests/models tests/test_prepared.py > "$OUT/tests-models.txt" 2>&1 &
timeout 560 python3 -m pytest "${ARGS[@]}" tests --ignore tests/models --ignore tests/test_prepared.py \
  --ignore tests/ops/test_ssd_forward.py --ignore tests/ops/test_ssd_backward.py > "$OUT/tests-other.txt" 2>&1 &
wait
for f in tests-models tests-other; do
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/$f.txt" | tail -15
done
