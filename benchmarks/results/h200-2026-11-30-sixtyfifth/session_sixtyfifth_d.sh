#!/usr/bin/env bash
# Sixty-fifth session, call 4 (about 150 s): the new GPU test of a layer's call at real shapes (D a value a head,
# the chain launch's row sums at its wide step), and test_prepared, on a copy of the repository.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
cd /tmp/xrepo
( timeout 200 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/ops/test_ssd_backward.py -k layer_call \
  > "$OUT/tests-layer.txt" 2>&1; echo "rc $?" >> "$OUT/tests-layer.txt" ) &
( timeout 200 python3 -m pytest -o addopts=-ra -p no:cacheprovider -q tests/test_prepared.py \
  > "$OUT/tests-prepared.txt" 2>&1; echo "rc $?" >> "$OUT/tests-prepared.txt" ) &
wait
for f in "$OUT"/tests-*.txt; do echo "== $f"; tail -4 "$f"; done
