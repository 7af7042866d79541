#!/usr/bin/env bash
# Sixty-sixth session, call 10 (about 60 s): call 9's failing tests again, with their GPU bounds (a kernel compiled
# for other dtypes sums in another order: within a rounding, not bit for bit).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml /tmp/xrepo/
(cd /tmp/xrepo && timeout 150 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider tests/ops/test_norm.py \
  tests/models/test_models.py -k "norm or autocast or training or kernels_in_model" > "$OUT/tests.txt" 2>&1; \
  echo "== tests rc $?"; grep -E "^FAILED|^E  .*(assert|rel)" "$OUT/tests.txt" | head -10 | cut -c1-200; tail -2 "$OUT/tests.txt")
