#!/usr/bin/env bash
# Seventieth session, call 7 (one H200, ~330 s): the final tree's SSD forward file on the GPU (every Gluon form, PDL's
# test among them), the prepared-call and launch tests (the launch option PDL adds goes through them) and the README's
# example.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
rm -rf /tmp/xrepo && mkdir -p /tmp/xrepo && cp -r tests benchmarks flashssm pyproject.toml README.md /tmp/xrepo/
cd /tmp/xrepo
timeout 320 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 --dist worksteal \
  tests/ops/test_ssd_forward.py tests/test_prepared.py tests/test_launch.py tests/test_readme.py \
  > "$OUT/tests.txt" 2>&1
grep -E "^(FAILED|ERROR)" "$OUT/tests.txt" | sort -u | head; tail -2 "$OUT/tests.txt"
