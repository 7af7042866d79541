#!/usr/bin/env bash
# Sixty-ninth session, call 5 (one H200, ~330 s): the forward's Gluon kernel now sweeps a span in `_sweep_span`
# (the same SASS offline in eight forms): both SSD test files on the GPU; the mixers' compile test (no lru_cache
# warning from the host helpers, now `_runtime.cached`) and the launch tests.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
cd /tmp/xrepo
timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider --tb=short -n 4 tests/models/test_models.py \
  -k "compiles or compile" tests/test_launch.py > "$OUT/tests-compile-launch.txt" 2>&1 &
timeout 400 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider --tb=short -n 12 --dist worksteal \
  tests/ops/test_ssd_forward.py tests/ops/test_ssd_backward.py > "$OUT/tests-ssd.txt" 2>&1
wait
for f in tests-compile-launch tests-ssd; do
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/$f.txt" | tail -12
done
